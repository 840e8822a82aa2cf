"""A vector kernel tuned by the project's GP-UCB sampler over its space, stored in SQLite:
every proposal is feasible and the study reaches the model's exhaustive best."""

from __future__ import annotations

from pathlib import Path

import optuna
import pytest

from aoe_optuna.aicore.vector.vector_ops import best_vector_config, vector_op_cost
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.samplers.gp_ucb.sampler import GPUCBSampler
from aoe_optuna.study.run.objective import suggest_config
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import vector_space

PROFILE = load_profile("Ascend910B2")


@pytest.mark.slow
def test_gp_ucb_proposes_only_feasible_tilings_and_finds_the_best(tmp_path: Path) -> None:
    op = VectorOp("swiglu", 64, 18944)
    space = vector_space(PROFILE, op)
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'vector.db'}")
    study = optuna.create_study(storage=storage, study_name=op.label, direction="minimize",
                                sampler=GPUCBSampler(space=space, seed=0, n_startup_trials=6))

    def objective(trial: optuna.Trial) -> float:
        params = suggest_config(trial, space)
        assert not space.explain(params), params  # never an infeasible proposal
        return vector_op_cost(PROFILE, op, params).total_s

    study.optimize(objective, n_trials=30)
    _, best = best_vector_config(PROFILE, op)
    assert len(study.trials) == 30 and space.n_feasible == 90
    assert study.best_value <= best.total_s * 1.02
