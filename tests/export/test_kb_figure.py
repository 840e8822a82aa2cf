"""The knowledge base's merge rule: one key holds one figure. A workload step's tokens/s, a
GEMM shape's own TFLOPS and another workload's step are never compared by value; such an
entry is refused, naming both figures and the two ways out, unless replace is asked."""

from __future__ import annotations

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, entry_key, make_entry
from aoe_optuna.export.kb_figure import figure, not_comparable

SOC = "Ascend910B2"
DECODE = "qwen2.5-7b decode batch=1 seq_len=1024 tp=1 fp16"
LONG = "qwen2.5-7b decode batch=1 seq_len=32768 tp=1 fp16"


def step(value: float, workload: str | None = DECODE, study: str = "layer") -> dict:
    return make_entry(SOC, "CatlassDecodeLayer", "fp16", 1, 3584, 4608, "row_major",
                      {"tile_m": 128}, value, None, study, None, workload=workload)


def shape(value: float, study: str = "ops/qkv_proj/1x4608x3584") -> dict:
    return make_entry(SOC, "CatlassDecodeLayer", "fp16", 1, 3584, 4608, "row_major",
                      {"tile_m": 64}, value, None, study, None, objective="TFLOPS",
                      latency_us=32.8)


def test_each_figure_says_what_it_is() -> None:
    assert figure(step(76.3)) == f"tokens/s of a step of {DECODE}"
    assert figure(step(76.3, workload=None)) == "tokens/s of a step (its workload not recorded)"
    assert figure(shape(1.0)) == "TFLOPS of the GEMM shape itself"
    assert figure({"objective": "calls/s"}) == "calls/s of the kernel"
    assert figure({"objective": "GB/s"}) == "'GB/s'"


@pytest.mark.parametrize("held,new,why", [
    (step(76.3), shape(1.0), "another unit"),
    (shape(1.0), step(76.3), "another unit"),
    (step(76.3), step(70.0, LONG), "the step of another workload"),
    (step(76.3), step(80.0), None),
    (step(76.3, workload=None), step(80.0), None),  # written before workloads: the unit alone
    (shape(1.0), shape(1.2), None),
])
def test_which_figures_compare(held: dict, new: dict, why: str | None) -> None:
    assert not_comparable(held, new) == why


def test_a_shapes_figure_never_replaces_a_steps_by_value_and_the_refusal_says_the_way_out(
) -> None:
    kb = KnowledgeBase()
    kb.merge(step(76.3163))
    before = kb.entries()
    with pytest.raises(KBError) as err:
        kb.merge(shape(32355.5))  # the reported fault: one GEMM's figure over a step's
    text = str(err.value)
    assert text.startswith("Ascend910B2/CatlassDecodeLayer/fp16 1x4608x3584 row_major: ")
    assert f"the held entry's value is tokens/s of a step of {DECODE} (study layer)" in text
    assert "the new one's TFLOPS of the GEMM shape itself (study ops/qkv_proj/1x4608x3584)" in text
    assert "write it to another knowledge base file (--kb), or give --kb-replace" in text
    assert "\n" not in text and kb.entries() == before


def test_steps_of_two_workloads_are_refused_and_one_workloads_keep_the_higher() -> None:
    kb = KnowledgeBase()
    kb.merge(step(76.3))
    with pytest.raises(KBError, match="the step of another workload, not comparable"):
        kb.merge(step(90.0, LONG, study="long"))
    assert kb.merge(step(80.0, study="again")).outcome == "replaced"
    assert kb.merge(step(79.0, study="worse")).outcome == "kept"
    assert kb.entries()[0]["study"] == "again"


def test_replace_puts_another_figure_in_place_but_one_figure_still_keeps_the_higher() -> None:
    kb = KnowledgeBase()
    kb.merge(step(76.3))
    forced = kb.merge(shape(0.9), replace=True)
    assert forced.outcome == "replaced" and forced.forced
    assert forced.describe() == (
        "replaced Ascend910B2/CatlassDecodeLayer/fp16 1x4608x3584 row_major: 0.9 TFLOPS "
        "(study ops/qkv_proj/1x4608x3584) over 76.3 tokens/s (study layer) "
        "(another figure: --kb-replace)")
    assert kb.merge(shape(0.8, study="worse"), replace=True).outcome == "kept"
    assert kb.merge(shape(1.1, study="better"), replace=True).outcome == "replaced"
    assert kb.entries()[0]["study"] == "better" and kb.entries()[0]["objective"] == "TFLOPS"


def test_a_planned_entry_is_checked_by_its_key_and_figure_alone() -> None:
    kb = KnowledgeBase()
    kb.merge(step(76.3))
    held = kb.entries()[0]
    probe = {f: held[f] for f in ("soc", "op", "dtype", "M", "K", "N", "layout")}
    kb.check_comparable({**probe, "objective": "tokens/s", "workload": DECODE})
    kb.check_comparable({**probe, "layout": "z_major", "objective": "TFLOPS"})  # another key
    with pytest.raises(KBError, match=r"the new one's TFLOPS of the GEMM shape itself \(study "
                                      r"run/qkv_proj/1x4608x3584\)"):
        kb.check_comparable({**probe, "objective": "TFLOPS", "study": "run/qkv_proj/1x4608x3584"})
    assert entry_key(probe) == entry_key(held)


def test_the_workload_is_kept_checked_and_optional() -> None:
    assert step(1.0)["workload"] == DECODE
    assert "workload" not in step(1.0, workload=None)
    with pytest.raises(KBError, match=r"workload: expected the name of the workload"):
        step(1.0, workload="")
