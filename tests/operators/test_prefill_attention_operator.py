"""Causal prefill attention as an operator of a run: its tiling space, its study on a
real SQLite storage (CANN's default first, no infeasible tiling measured), its plan's
round trip and its knowledge base entry."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import optuna
import pytest

from aoe_optuna.aicore.attention.prefill_attention import (
    default_cost,
    floor_s,
    prefill_attention_cost,
)
from aoe_optuna.attrs import ATTR_BASELINE
from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_lookup import lookup_layer_op
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.space.prefill_attention import (
    PrefillAttention,
    PrefillTiling,
    cann_default_tiling,
    feasible_tilings,
    violations,
)
from aoe_optuna.space.prefill_attention_space import (
    FIELDS,
    config_of,
    prefill_attention_space,
    tiling_of,
)
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.storage.opening import open_storage

PROFILE = load_profile("Ascend910B2")
SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [64, 128],
                     "pipeline": [1, 2]},
    "workload": {"model": "qwen2.5-7b", "phase": "prefill", "batch": 1, "seq_len": 512,
                 "attention": "tuned"},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3},
}
PARENT = "Gemm-Ascend910B2-qwen2.5-7b-prefill-b1-s512-attntuned-operators"
STUDY = f"{PARENT}/attention/prefill-b1-q28-kv4-d128-s512"


@pytest.mark.parametrize("seq_len", [300, 1024, 4096])
def test_prefill_space_is_exactly_the_models_feasible_tilings(seq_len: int) -> None:
    shape = PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=seq_len)
    space = prefill_attention_space(PROFILE, shape)
    feasible = {tiling_of(c) for c in space.configs(space.all_feasible())}
    assert feasible == set(feasible_tilings(PROFILE, shape))
    every = [PrefillTiling(*t) for t in itertools.product(*(p.choices for p in space.params))]
    assert feasible == {t for t in every if not violations(PROFILE, shape, t)}
    assert cann_default_tiling(PROFILE, shape) in feasible
    bad = {"q_tile": 128, "kv_tile": 256, "l1_tile": 512, "pipeline": 2, "dealing": "cyclic"}
    assert space.explain(bad) == ["tiles: expected l1_tile to divide kv_tile"]


def test_the_operator_round_trips_its_plan_and_never_beats_its_floor() -> None:
    shape = PrefillAttention(batch=2, q_heads=7, kv_heads=1, head_dim=128, seq_len=768)
    op = LayerOperator(shape, "bf16", ("b2/attention",), 28)
    assert op.dims == "prefill-b2-q7-kv1-d128-s768-bf16"
    assert LayerOperator.from_plan(op.plan_entry("run")) == op
    config = op.default_config(PROFILE)
    assert config == config_of(cann_default_tiling(PROFILE, shape))
    assert op.model(PROFILE)(config) == default_cost(PROFILE, shape).total_s
    floor = op.bound_s(PROFILE)
    assert floor == floor_s(PROFILE, shape) >= op.roofline_s(PROFILE)
    assert min(prefill_attention_cost(PROFILE, shape, t).total_s
               for t in feasible_tilings(PROFILE, shape)) >= floor


def test_operators_run_tunes_prefill_attention_from_the_cann_default(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, db, kb = tmp_path / "spec.json", tmp_path / "ops.db", tmp_path / "kb.json"
    spec.write_text(json.dumps(SPEC))
    assert main(["operators", "--config", str(spec), "--storage", f"sqlite:///{db}",
                 "--n-trials", "16", "--sampler", "tpe", "--seed", "0", "--kb", str(kb),
                 "--no-progress"]) == 0
    assert "attention" in capsys.readouterr().out.split("step split:")[1]
    storage = open_storage(f"sqlite:///{db}")
    assert STUDY in optuna.get_all_study_names(storage)
    study = optuna.load_study(study_name=STUDY, storage=storage)
    done = [t for t in study.get_trials() if is_measured(t)]
    assert done and done[0].user_attrs.get(ATTR_BASELINE)
    shape = PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=512)
    assert done[0].params == config_of(cann_default_tiling(PROFILE, shape))
    op = LayerOperator.from_plan(study.user_attrs["layer_op"])
    assert op.problem == shape and op.op_name == "prefill_attention"
    space = op.space(PROFILE)
    assert all(not space.explain(t.params) for t in done)  # none infeasible
    problem = {"batch": 1, "q_heads": 28, "kv_heads": 4, "head_dim": 128, "seq_len": 512,
               "kv_len": 512, "causal": True}
    hit = lookup_layer_op(kb, "Ascend910B2", "prefill_attention", "fp16", problem)
    assert hit is not None and set(hit["config"]) == set(FIELDS)
    assert hit["kind"] == "attention" and hit["study"] == STUDY
    assert any(e.get("kind", "gemm") == "gemm" for e in KnowledgeBase.load(kb).entries())
