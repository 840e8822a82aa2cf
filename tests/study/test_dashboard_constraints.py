"""Why the study does not write the ``constraints`` list optuna-dashboard 0.21 reads.

docs/decisions/0016: Optuna 5 reads the list and the per-rule keys side by
side, so writing both would show the samplers every rule twice. These checks
hold that claim against the installed Optuna and optuna-dashboard; when one
fails, the decision is worth revisiting.
"""

from __future__ import annotations

from pathlib import Path

import optuna
from optuna.samplers._gp.sampler import _get_constraint_vals_and_feasibility
from optuna.samplers._tpe.sampler import _get_infeasible_trial_score
from optuna.study._constrained_optimization import _CONSTRAINTS_KEY
from optuna_dashboard._serializer import serialize_frozen_trial

from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.objective import record_constraints

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"
TOO_BIG = {"tile_m": 256, "tile_k": 256, "tile_n": 256, "pipeline": "double_buffer",
           "l1_prefetch": 1, "output_align": 1}  # breaks L0A, L0B, L0C and L1


def _infeasible_trial(
    tmp_path: Path, with_list: bool = False
) -> tuple[optuna.Study, optuna.trial.FrozenTrial, int]:
    """A pruned infeasible trial as the objective writes it (and the list, if asked)."""
    spec = load_spec(str(SPEC))
    tmp_path.mkdir(exist_ok=True)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path / 'c.db'}", direction="maximize")
    trial = study.ask()
    violated = record_constraints(trial, spec.space, TOO_BIG)
    assert violated
    if with_list:
        values = list(study._storage.get_trial(trial._trial_id).constraints.values())
        study._storage.set_trial_system_attr(trial._trial_id, _CONSTRAINTS_KEY, values)
    study.tell(trial, state=optuna.trial.TrialState.PRUNED)
    (frozen,) = study.get_trials()
    return study, frozen, len(spec.space.violations(spec.space.index(TOO_BIG)[None, :]))


def test_per_rule_keys_reach_samplers_once_and_the_dashboard_not_at_all(tmp_path: Path) -> None:
    study, trial, n_rules = _infeasible_trial(tmp_path)
    assert len(trial.constraints) == n_rules and "L0A" in trial.constraints
    serialized = serialize_frozen_trial(study._study_id, trial, {})
    assert serialized["constraints"] == []  # optuna-dashboard 0.21 reads the list only


def test_writing_the_list_as_well_would_double_every_rule(tmp_path: Path) -> None:
    _, trial, n_rules = _infeasible_trial(tmp_path / "keys")
    score = _get_infeasible_trial_score(trial)
    study, both, _ = _infeasible_trial(tmp_path / "both", with_list=True)
    assert len(both.constraints) == 2 * n_rules
    assert _get_infeasible_trial_score(both) == 2 * score  # TPE: twice as far from feasible
    vals, _ = _get_constraint_vals_and_feasibility(study, [both])
    assert vals.shape == (1, 2 * n_rules)  # GPSampler: a second model of every rule
    assert serialize_frozen_trial(study._study_id, both, {})["constraints"]
