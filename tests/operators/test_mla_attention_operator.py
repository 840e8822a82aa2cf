"""MLA decode attention as an operator of a run: its tiling space, DeepSeek-V2-Lite's
decode tuned on a real SQLite storage (catlass's default first, no infeasible tiling
measured), its plan's round trip, its knowledge base entry and its export."""

from __future__ import annotations

import itertools
import json
from pathlib import Path

import optuna
import pytest

from aoe_optuna.aicore.attention.mla_attention import default_cost, floor_s
from aoe_optuna.attrs import ATTR_BASELINE
from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_lookup import lookup_layer_op
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.space.mla_attention import (
    MlaDecodeAttention,
    MlaTiling,
    catlass_default_tiling,
    feasible_tilings,
    violations,
)
from aoe_optuna.space.mla_attention_space import (
    FIELDS,
    config_of,
    mla_attention_space,
    tiling_of,
)
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.storage.opening import open_storage

from ..workload.conftest import MODELS_DIR

PROFILE = load_profile("Ascend910B2")
SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [64, 128],
                     "pipeline": [1, 2]},
    "workload": {"hf_config": str(MODELS_DIR / "deepseek-v2-lite.json"), "phase": "decode",
                 "batch": 1, "seq_len": 4096, "attention": "tuned"},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3},
}
LITE_B1_4K = MlaDecodeAttention(batch=1, q_heads=16, context=4096)
DIMS = "attention/mla-b1-q16-l512-r64-s4096"


@pytest.mark.parametrize("shape", [LITE_B1_4K, MlaDecodeAttention(2, 128, 1000)])
def test_mla_space_is_exactly_the_models_feasible_tilings(shape: MlaDecodeAttention) -> None:
    space = mla_attention_space(PROFILE, shape)
    feasible = {tiling_of(c) for c in space.configs(space.all_feasible())}
    assert feasible == set(feasible_tilings(PROFILE, shape))
    every = [MlaTiling(*t) for t in itertools.product(*(p.choices for p in space.params))]
    assert feasible == {t for t in every if not violations(PROFILE, shape, t)}
    assert len(feasible) < len(every)  # the rules bind
    assert catlass_default_tiling(PROFILE, shape) in feasible


def test_the_operator_round_trips_its_plan_and_never_beats_its_floor() -> None:
    shape = MlaDecodeAttention(batch=3, q_heads=32, context=2000, page_tokens=64)
    op = LayerOperator(shape, "bf16", ("b3/attention",), 27)
    assert op.dims == "mla-b3-q32-l512-r64-s2000-p64-bf16"
    assert op.op_name == "mla_decode_attention"
    assert LayerOperator.from_plan(op.plan_entry("run")) == op
    config = op.default_config(PROFILE)
    assert config == config_of(catlass_default_tiling(PROFILE, shape))
    assert op.model(PROFILE)(config) == default_cost(PROFILE, shape).total_s
    assert op.bound_s(PROFILE) == floor_s(PROFILE, shape) >= op.roofline_s(PROFILE)


@pytest.mark.slow  # about 10 s: every GEMM shape of the MoE model is a study too
def test_operators_run_tunes_deepseek_mla_decode_and_exports_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, db, kb = tmp_path / "spec.json", tmp_path / "ops.db", tmp_path / "kb.json"
    spec.write_text(json.dumps(SPEC))
    url = f"sqlite:///{db}"
    assert main(["operators", "--config", str(spec), "--storage", url, "--n-trials", "40",
                 "--sampler", "tpe", "--seed", "0", "--kb", str(kb), "--no-progress"]) == 0
    assert "attention" in capsys.readouterr().out.split("step split:")[1]
    storage = open_storage(url)
    (name,) = [n for n in optuna.get_all_study_names(storage) if n.endswith(DIMS)]
    study = optuna.load_study(study_name=name, storage=storage)
    done = [t for t in study.get_trials() if is_measured(t)]
    assert done and done[0].user_attrs.get(ATTR_BASELINE)
    assert done[0].params == config_of(catlass_default_tiling(PROFILE, LITE_B1_4K))
    op = LayerOperator.from_plan(study.user_attrs["layer_op"])
    assert op.problem == LITE_B1_4K and op.weight == 27
    space = op.space(PROFILE)
    assert all(not space.explain(t.params) for t in done)  # none infeasible
    problem = {"batch": 1, "q_heads": 16, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
               "context": 4096, "page_tokens": 128}
    hit = lookup_layer_op(kb, "Ascend910B2", "mla_decode_attention", "fp16", problem)
    assert hit is not None and set(hit["config"]) == set(FIELDS)
    assert hit["kind"] == "attention" and hit["study"] == name

    # `aoe-tune export` of the attention study writes the same entry to a fresh KB.
    fresh = tmp_path / "fresh.json"
    assert main(["export", "--storage", url, "--study-name", name, "--kb", str(fresh)]) == 0
    assert "added Ascend910B2/mla_decode_attention/fp16 batch=1" in capsys.readouterr().out
    (entry,) = KnowledgeBase.load(fresh).entries()
    assert entry["problem"] == problem and entry["config"] == hit["config"]


def test_mla_prefill_keys_its_v_width_and_gqa_prefill_keys_none() -> None:
    narrow = PrefillAttention(batch=1, q_heads=16, kv_heads=16, head_dim=192, seq_len=2048,
                              v_head_dim=128)
    op = LayerOperator(narrow, "fp16", ("attention",), 27)
    assert op.dims == "prefill-b1-q16-kv16-d192-s2048-v128"
    assert op.problem_doc()["v_head_dim"] == 128
    assert LayerOperator.from_plan(op.plan_entry("run")) == op
    assert not op.space(PROFILE).explain(op.default_config(PROFILE))
    gqa = LayerOperator(PrefillAttention(1, 28, 4, 128, 2048), "fp16", ("attention",), 28)
    assert "v_head_dim" not in gqa.plan_entry("run")["problem"]  # older studies resume
