"""An operator run never ships a tuned layer kernel that the model says is slower than
the library's default kernel it replaces: the table, the knowledge base, the kernels
written and the tokens/s all keep the library's."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from aoe_optuna.aicore.cann.library_vector import library_vector_seconds
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, make_layer_entry
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators import outcome
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.state import ShapeResult
from aoe_optuna.operators.tuner import OperatorTuner, TunerOptions
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.workload.vector_ops import VectorOp

PROFILE = load_profile("Ascend910B2")
SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [64],
                     "pipeline": [1, 2]},
    # prefill: CANN's norms (MultiN/MergeN passes) beat the project's row-by-row kernel
    "workload": {"model": "qwen2.5-7b", "phase": "prefill", "batch": 1, "seq_len": 4096,
                 "vector_kernels": "tuned"},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3},
}


def _result(op: VectorOp, latency_s: float, library_s: float | None) -> ShapeResult:
    shape = LayerOperator(op, op.dtype, (op.kind,), 1)
    return ShapeResult(shape, "run/x", 5, 0, {"tile_len": 4096}, 0, latency_s,
                       (latency_s, latency_s), latency_s, None, op.roofline_s(PROFILE),
                       library_s)


def test_the_faster_of_the_tuned_and_the_library_kernel_ships() -> None:
    op = VectorOp("rmsnorm", 64, 3584)
    slower = _result(op, 12e-6, 10e-6)
    assert slower.library_kept and slower.shipped_s == 10e-6
    faster = _result(op, 9e-6, 10e-6)
    assert not faster.library_kept and faster.shipped_s == 9e-6
    # equal as a trial stores it (to the ns): the tuned kernel, not a rounding, decides
    tie = _result(op, 10.0004e-6, 10e-6)
    assert not tie.library_kept and tie.shipped_s == 10.0004e-6
    assert _result(op, 10.0006e-6, 10e-6).library_kept
    assert not _result(op, 12e-6, None).library_kept  # nothing charged: a GEMM, the chip


@pytest.mark.slow
def test_a_run_keeps_the_library_norm_where_its_best_tuning_is_slower(tmp_path: Path) -> None:
    spec = spec_from_dict(SPEC)
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    options = TunerOptions(budget=40, scheduler=make_scheduler("gradient"), sampler="random",
                           seed=1)
    result = OperatorTuner(open_storage(url), url, "run", spec, options).run()
    layer = {r.shape.kind: r for r in result.shapes if isinstance(r.shape, LayerOperator)}
    norm = layer["rmsnorm"]
    library = library_vector_seconds(PROFILE, norm.shape.problem)
    assert norm.library_s == library and norm.latency_s > 1.2 * library
    assert norm.library_kept and norm.shipped_s == library
    for r in layer.values():  # each charged the library's default, kept where faster
        assert r.library_s == library_vector_seconds(PROFILE, r.shape.problem)
        assert r.shipped_s == (r.library_s if r.library_kept else r.latency_s)

    # the tokens/s: what the step charges each call, the faster of the two per operator
    wl = spec.workload
    latency = {n: r.shipped_s for r in result.shapes for n in r.shape.names}
    step = (wl.fixed_s + sum(g.count * latency[g.name] for g in wl.gemms)
            + sum(op.count * (latency[op.name] - op.charged_s) for op in wl.layer_ops))
    assert result.tokens_per_s == pytest.approx(wl.tokens_per_step / step)
    assert math.fsum(p.seconds for p in result.split) == pytest.approx(step)

    # the table and the lines under it
    row = next(r for r in outcome.rows(result) if r[0] == "rmsnorm")
    assert row[-1] == outcome.LIBRARY_KEPT
    lines = outcome.end_to_end_lines(result)
    said = (f"library default kept: rmsnorm 4096x3584: the library kernel's "
            f"{library * 1e6:,.2f} us beats the tuned {norm.latency_s * 1e6:,.2f} us")
    assert any(line.startswith(said) for line in lines)
    kept = [r for r in result.shapes if r.library_kept]
    assert sum(line.startswith("library default kept:") for line in lines) == len(kept)

    # the knowledge base records it; no kernel is written for it
    kb = tmp_path / "kb.json"
    merged = list(outcome.merge_into_kb(result, spec, url, kb))
    assert any("/rmsnorm/fp16 rows=4096 width=3584" in line and line.endswith(
        f"; library default kept ({round(library * 1e6, 4):.6g} us)") for line in merged)
    entries = {e["op"]: e for e in KnowledgeBase.load(kb).entries() if e.get("kind")}
    assert entries["rmsnorm"]["library_kept_us"] == round(library * 1e6, 4)
    assert all(("library_kept_us" in entries[r.shape.kind]) == r.library_kept
               for r in layer.values())
    exports = outcome.export_kernels(result, spec, url, tmp_path / "k", None)
    assert not (tmp_path / "k" / "rmsnorm_4096x3584.cpp").exists()
    assert any(line.startswith("not written rmsnorm 4096x3584: the library's default kernel")
               for line in exports.lines)
    assert exports.closing_line(len(result.shapes)) is None  # kept is not a refusal


@pytest.mark.parametrize("bad", [-1.0, 0.0, "fast", float("nan")])
def test_a_knowledge_base_entry_with_a_bad_library_time_is_refused(bad: object) -> None:
    with pytest.raises(KBError, match="library_kept_us: expected a positive number"):
        make_layer_entry("Ascend910B2", "vector", "rmsnorm", "fp16",
                         {"rows": 64, "width": 3584},
                         {"tile_len": 4096, "cores": 40, "double_buffer": 1}, 1e5, None, "s",
                         None, latency_us=10.0, library_kept_us=bad)  # type: ignore[arg-type]
