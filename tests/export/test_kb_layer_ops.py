"""Attention and vector kernel entries in the knowledge base: checked field by field,
kept apart from the GEMM entries (lookup, C header), and beside them in one file."""

from __future__ import annotations

import json

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_c_header import c_header
from aoe_optuna.export.kb_entry import KBError, make_entry, make_layer_entry, validate_entry
from aoe_optuna.export.kb_lookup import lookup, lookup_layer_op

SOC = "Ascend910B2"
ATTENTION = {"batch": 1, "q_heads": 28, "kv_heads": 4, "head_dim": 128, "context": 1024,
             "page_tokens": 128, "kv_layout": "BNSD"}
TILING = {"kv_split": 8, "block_tile": 128, "l1_tile": 128, "l0_tile": 128, "pipeline": 2}


def attention(value: float = 1.0e5, **problem: object) -> dict:
    return make_layer_entry(SOC, "attention", "decode_attention", "fp16",
                            {**ATTENTION, **problem}, TILING, value, 0.01, "run/attention/x",
                            "sqlite:///a.db", latency_us=1e6 / value,
                            date="2026-01-02T03:04:05+00:00")


def norm(value: float = 2.0e5) -> dict:
    return make_layer_entry(SOC, "vector", "add_rmsnorm", "fp16", {"rows": 64, "width": 3584},
                            {"tile_len": 4096, "cores": 40, "double_buffer": 1, "fused": 1},
                            value, None, "run/add_rmsnorm/64x3584", None)


def gemm() -> dict:
    return make_entry(SOC, "gemm", "fp16", 1, 3584, 4608, "row_major",
                      {"tile_m": 16, "tile_k": 64, "tile_n": 128}, 1.2, 0.1, "s", None,
                      objective="TFLOPS")


def test_entries_of_every_kind_share_a_file_and_gemm_entries_are_unchanged(tmp_path):
    kb = KnowledgeBase()
    for e in (attention(), norm(), gemm()):
        assert kb.merge(e).outcome == "added"
    path = tmp_path / "kb.json"
    kb.save(path)
    saved = json.loads(path.read_text())["entries"]
    assert "kind" not in saved[0] and saved[0]["M"] == 1  # GEMM entries first, as before
    assert [e["op"] for e in saved[1:]] == ["add_rmsnorm", "decode_attention"]  # by op
    again = KnowledgeBase.load(path)
    assert again.entries() == kb.entries()
    hit = lookup_layer_op(again, SOC, "decode_attention", "fp16", ATTENTION)
    assert hit is not None and hit["config"] == TILING
    assert lookup_layer_op(again, SOC, "decode_attention", "fp16",
                           {**ATTENTION, "context": 2048}) is None  # exact problems only
    # the GEMM lookup and the C header see the GEMM entry only
    found = lookup(again, SOC, "gemm", "fp16", 1, 3584, 4608)
    assert found is not None and found.exact
    assert "decode_attention" not in c_header(again) and "from 1 GEMM entries" in c_header(again)


def test_merge_keeps_the_faster_tiling_of_a_problem():
    kb = KnowledgeBase()
    kb.merge(attention(1.0e5))
    result = kb.merge(attention(1.2e5))
    assert result.outcome == "replaced"
    assert result.describe().startswith(
        "replaced Ascend910B2/decode_attention/fp16 batch=1 q_heads=28 kv_heads=4")
    assert kb.merge(attention(0.9e5)).outcome == "kept"
    assert len(kb) == 1


@pytest.mark.parametrize("change,message", [
    ({"kind": "softmax"}, "kind: expected 'gemm' (or no kind) or one of"),
    ({"op": "rmsnorm"},
     "op: expected one of ['decode_attention', 'prefill_attention', 'mla_decode_attention']"),
    ({"problem": {**ATTENTION, "context": 0}}, "problem.context: expected an integer"),
    ({"problem": {**ATTENTION, "kv_layout": "NZ"}}, "problem.kv_layout: expected one of"),
    ({"problem": {"rows": 1, "width": 8}}, "problem: expected an object with exactly batch"),
    ({"config": {}}, "config: expected the op's tiling parameters kv_split, block_tile, "
                     "l1_tile, l0_tile, pipeline, got []"),
    ({"config": {**TILING, "warp": 2}}, "config: expected the op's tiling parameters"),
    ({"config": {**TILING, "block_tile": 96}},
     "config.block_tile: expected one of [128, 256, 512, 1024, 2048, 4096, 8192], got 96"),
    ({"config": {**TILING, "kv_split": 0}}, "config.kv_split: expected an integer from 1"),
    ({"value": float("nan")}, "value: expected a finite number"),
])
def test_a_malformed_entry_is_one_line_naming_the_field(change, message):
    bad = {**attention(), **change}
    with pytest.raises(KBError) as info:
        validate_entry(bad, where="kb.json: entries[3]")
    text = str(info.value)
    assert text.startswith("kb.json: entries[3]") and message in text and "\n" not in text
    if "config" in change or "value" in change:  # past the key: the key is named
        assert text.startswith("kb.json: entries[3] (Ascend910B2/decode_attention/fp16 batch=1 ")


def test_a_malformed_entry_in_a_file_is_refused_naming_the_file(tmp_path):
    path = tmp_path / "kb.json"
    bad = {**norm(), "problem": {"rows": 64}}
    path.write_text(json.dumps({"format": "aoe-kb", "version": 1, "entries": [bad]}))
    with pytest.raises(KBError, match=r"kb.json: entries\[0\]: problem: expected an object "
                                      r"with exactly rows, width"):
        KnowledgeBase.load(path)
