"""A kernel set's entries: the range of M each kernel serves, checked when read, kept apart
from one shape's own winners, and answered first by the lookup in Python and in C."""

from __future__ import annotations

import json
import subprocess

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, make_entry, validate_entry
from aoe_optuna.export.kb_lookup import lookup
from tests.export.test_kb import CC, SOC, compile_driver, python_answer


def ranged(m: int, low: int, high: int, tile_m: int, value: float = 5.0) -> dict:
    return make_entry(SOC, "gemm", "fp16", m, 3584, 4608, "row_major", {"tile_m": tile_m},
                      value, None, "run/qkv_proj/4608x3584", None, objective="TFLOPS",
                      latency_us=30.0, m_range=(low, high))


def kernel_set_kb() -> KnowledgeBase:
    kb = KnowledgeBase()
    for e in (ranged(1, 1, 64, 64), ranged(65, 65, 160, 160), ranged(161, 161, 256, 256)):
        kb.merge(e)
    # a shape's own winner of another K, N, and one of the same K, N outside the ranges
    kb.merge(make_entry(SOC, "gemm", "fp16", 16, 3584, 3584, "row_major", {"tile_m": 16},
                        9.0, None, "ops/o_proj", None, objective="TFLOPS"))
    kb.merge(make_entry(SOC, "gemm", "fp16", 1024, 3584, 4608, "row_major", {"tile_m": 128},
                        9.0, None, "ops/qkv_proj", None, objective="TFLOPS"))
    return kb


def test_an_entry_keeps_its_range_and_a_bad_range_is_one_line():
    e = ranged(8, 1, 64, 64)
    assert e["m_range"] == [1, 64] and validate_entry(json.loads(json.dumps(e))) == e
    for bad in ([9, 64], [1, 4], [1], "1-64", [0, 64], [1, 2 ** 25]):
        with pytest.raises(KBError, match=r"m_range: expected \[low, high\]") as exc:
            validate_entry({**e, "m_range": bad})
        assert "\n" not in str(exc.value)


def test_a_range_never_replaces_a_shapes_own_winner_by_value():
    kb = KnowledgeBase()
    own = make_entry(SOC, "gemm", "fp16", 1, 3584, 4608, "row_major", {"tile_m": 16}, 1.0,
                     None, "ops/qkv", None, objective="TFLOPS")
    kb.merge(own)
    with pytest.raises(KBError, match="a kernel set's kernel for a range of M"):
        kb.merge(ranged(1, 1, 64, 64, value=9.0))
    assert kb.merge(ranged(1, 1, 64, 64), replace=True).forced


def test_lookup_answers_the_range_that_holds_m_before_nearness():
    kb = kernel_set_kb()
    for m, tile_m in ((1, 64), (60, 64), (64, 64), (65, 160), (100, 160), (256, 256)):
        found = lookup(kb, SOC, "gemm", "fp16", m, 3584, 4608)
        assert found is not None and found.in_range and found.config["tile_m"] == tile_m
        assert "kernel set entry" in found.describe()
    outside = lookup(kb, SOC, "gemm", "fp16", 900, 3584, 4608)
    assert outside is not None and not outside.in_range and outside.entry["M"] == 1024
    other = lookup(kb, SOC, "gemm", "fp16", 20, 3584, 3584)  # no range of this K, N
    assert other is not None and not other.in_range and other.entry["M"] == 16


@pytest.mark.skipif(CC is None, reason="needs gcc")
def test_the_c_lookup_answers_the_same(tmp_path):
    kb = kernel_set_kb()
    exe = compile_driver(tmp_path, kb)
    queries = [(m, 3584, 4608, -1) for m in range(1, 300, 7)]
    queries += [(m, 3584, 3584, -1) for m in (1, 100, 4000)] + [(64, 3584, 4608, 0)]
    args = [str(exe), SOC, "gemm", "fp16"]
    for q in queries:
        args += map(str, q)
    got = subprocess.run(args, capture_output=True, text=True, check=True,
                         timeout=60).stdout.splitlines()
    assert got == [python_answer(kb, "fp16", *q) for q in queries]
