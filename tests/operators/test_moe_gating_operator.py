"""The MoE router's gating as an operator kind, through the protocol alone: the registry
finds it, its plan and knowledge base entry round-trip, its kernel renders, and a
Qwen3-30B-A3B decode tunes it on a real SQLite storage (CANN's tiling first, nothing
infeasible measured) and exports it."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from aoe_optuna.aicore.vector.moe_gating import default_gating_cost, floor_s
from aoe_optuna.attrs import ATTR_BASELINE
from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, make_layer_entry
from aoe_optuna.export.kb_lookup import lookup_layer_op
from aoe_optuna.export.kernel_source import ExportError
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.kinds import moe_gating
from aoe_optuna.operators.kinds.registry import kind_of, kind_of_op, kind_of_plan
from aoe_optuna.operators.layer_ops import LayerOperator, layer_operators
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.workload.moe_gating import MoeGating, cann_tiling

from ..workload.conftest import MODELS_DIR

PROFILE = load_profile("Ascend910B2")
SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [64, 128],
                     "pipeline": [1, 2]},
    "workload": {"hf_config": str(MODELS_DIR / "qwen3-30b-a3b.json"), "phase": "decode",
                 "batch": 16, "seq_len": 1024, "vector_kernels": "tuned"},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3},
}
QWEN3_B16 = MoeGating(16, 128, 8)
PROBLEM = {"rows": 16, "experts": 128, "top_k": 8}


def test_the_registry_plan_and_knowledge_base_take_the_new_kind() -> None:
    op = LayerOperator(QWEN3_B16, "fp16", ("moe_gating",), 48)
    assert op.operator_kind is kind_of(QWEN3_B16) is moe_gating.KIND
    assert (op.kind, op.op_name, op.dims) == ("moe_gating", "moe_gating", "16x128-top8")
    plan = op.plan_entry("run")
    assert plan["op"] == "moe_gating" and kind_of_plan(plan) is moe_gating.KIND
    assert LayerOperator.from_plan(plan) == op and kind_of_op("moe_gating") is moe_gating.KIND
    assert op.default_config(PROFILE) == cann_tiling(PROFILE, QWEN3_B16)
    assert op.model(PROFILE)(op.default_config(PROFILE)) == default_gating_cost(
        PROFILE, QWEN3_B16).total_s
    assert op.bound_s(PROFILE) == floor_s(PROFILE, QWEN3_B16) > op.roofline_s(PROFILE)
    entry = make_layer_entry("Ascend910B2", op.operator_kind.part, op.op_name, "fp16",
                             op.problem_doc(), op.default_config(PROFILE), 1e5, None, "run",
                             None)
    assert entry["kind"] == "vector" and entry["problem"] == PROBLEM
    with pytest.raises(KBError, match=r"problem: expected an object with exactly rows, "
                                      r"experts, top_k, got"):
        make_layer_entry("Ascend910B2", "vector", "moe_gating", "fp16", {"rows": 16},
                         {"cores": 1}, 1.0, None, "run", None)


def test_its_kernel_renders_the_tuned_tiling_and_refuses_what_it_cannot_run() -> None:
    config = {"tile_rows": 1, "col_tile": 64, "cores": 16, "double_buffer": 0}
    text, what = moe_gating.KIND.render(QWEN3_B16, "fp16", config, PROFILE, None)
    for line in ("constexpr uint32_t TILE_ROWS = 1;", "constexpr uint32_t COL_TILE = 64;",
                 "constexpr uint32_t CORES = 16;", "constexpr uint32_t BUFFER_NUM = 1;",
                 "constexpr uint32_t EXPERTS = 128;", "constexpr uint32_t TOP_K = 8;",
                 "using InputT = half;"):
        assert line in text
    assert what.startswith("Ascend C MoE gating kernel, 1 rows x 64 experts per pass")
    with pytest.raises(ExportError, match=r"^moe_gating 16x128 top8: gating_share"):
        moe_gating.KIND.render(QWEN3_B16, "fp16", {**config, "cores": 24}, PROFILE, None)
    with pytest.raises(ExportError, match=r"60 experts is not a multiple of 16"):
        moe_gating.KIND.render(MoeGating(16, 60, 4), "fp16",
                               {**config, "col_tile": 64}, PROFILE, None)


def test_only_the_moe_spec_lists_the_gating_operator(tmp_path: Path) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    ops = {op.kind: op for op in layer_operators(load_spec(path).workload)}
    assert ops["moe_gating"].problem == QWEN3_B16 and ops["moe_gating"].weight == 48
    path.write_text(json.dumps({**SPEC, "workload": {"model": "qwen2.5-7b",
                                                     "vector_kernels": "tuned"}}))
    assert "moe_gating" not in {op.kind for op in layer_operators(load_spec(path).workload)}


@pytest.mark.slow  # about 10 s: every GEMM shape and vector kernel of the MoE model too
def test_operators_run_tunes_qwen3_gating_and_exports_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec, db, kb = tmp_path / "spec.json", tmp_path / "ops.db", tmp_path / "kb.json"
    spec.write_text(json.dumps(SPEC))
    url = f"sqlite:///{db}"
    assert main(["operators", "--config", str(spec), "--storage", url, "--n-trials", "40",
                 "--sampler", "tpe", "--seed", "0", "--kb", str(kb), "--no-progress"]) == 0
    capsys.readouterr()
    storage = open_storage(url)
    (name,) = [n for n in optuna.get_all_study_names(storage)
               if n.endswith("/moe_gating/16x128-top8")]
    study = optuna.load_study(study_name=name, storage=storage)
    done = [t for t in study.get_trials() if is_measured(t)]
    assert done and done[0].user_attrs.get(ATTR_BASELINE)
    assert done[0].params == cann_tiling(PROFILE, QWEN3_B16)
    space = LayerOperator.from_plan(study.user_attrs["layer_op"]).space(PROFILE)
    assert all(not space.explain(t.params) for t in done)  # none infeasible
    hit = lookup_layer_op(kb, "Ascend910B2", "moe_gating", "fp16", PROBLEM)
    assert hit is not None and hit["kind"] == "vector" and hit["study"] == name

    out = tmp_path / "kernels"
    out.mkdir()
    assert main(["export", "--storage", url, "--study-name", name, "--kb",
                 str(tmp_path / "fresh.json"), "--output", str(out / "gating.cpp")]) == 0
    assert "added Ascend910B2/moe_gating/fp16 rows=16" in capsys.readouterr().out
    (entry,) = KnowledgeBase.load(tmp_path / "fresh.json").entries()
    assert entry["problem"] == PROBLEM and entry["config"] == hit["config"]
    assert f"constexpr uint32_t CORES = {hit['config']['cores']};" in (
        out / "gating.cpp").read_text()
