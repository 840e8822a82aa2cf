"""Prefill attention entries in the knowledge base: keyed by their own problem fields
beside decode attention's, round-tripped through the file, a malformed one refused."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, make_layer_entry, validate_entry
from aoe_optuna.export.kb_lookup import lookup_layer_op

SOC = "Ascend910B2"
PREFILL = {"batch": 1, "q_heads": 28, "kv_heads": 4, "head_dim": 128, "seq_len": 4096,
           "kv_len": 4096, "causal": True}
DECODE = {"batch": 1, "q_heads": 28, "kv_heads": 4, "head_dim": 128, "context": 4096,
          "page_tokens": 128, "kv_layout": "BNSD"}
TILING = {"q_tile": 128, "kv_tile": 1024, "l1_tile": 256, "pipeline": 2, "dealing": "cyclic"}


def prefill(value: float = 2.0e3, **problem: object) -> dict:
    return make_layer_entry(SOC, "attention", "prefill_attention", "fp16",
                            {**PREFILL, **problem}, TILING, value, 0.05,
                            "run/attention/prefill-b1-q28-kv4-d128-s4096", None,
                            latency_us=1e6 / value, date="2026-01-02T03:04:05+00:00")


def test_a_prefill_entry_round_trips_beside_a_decode_entry(tmp_path: Path) -> None:
    kb = KnowledgeBase()
    decode = make_layer_entry(SOC, "attention", "decode_attention", "fp16", DECODE,
                              {"kv_split": 8, "block_tile": 128, "l1_tile": 128,
                               "l0_tile": 128, "pipeline": 2}, 1.0e5, None, "d", None)
    assert kb.merge(prefill()).outcome == "added" and kb.merge(decode).outcome == "added"
    path = tmp_path / "kb.json"
    kb.save(path)
    again = KnowledgeBase.load(path)
    assert again.entries() == kb.entries()
    hit = lookup_layer_op(again, SOC, "prefill_attention", "fp16", PREFILL)
    assert hit is not None and hit["config"] == TILING and hit["problem"]["causal"] is True
    assert lookup_layer_op(again, SOC, "prefill_attention", "fp16",
                           {**PREFILL, "seq_len": 2048, "kv_len": 2048}) is None
    assert lookup_layer_op(again, SOC, "decode_attention", "fp16", DECODE) is not None
    assert [e["op"] for e in json.loads(path.read_text())["entries"]] == [
        "decode_attention", "prefill_attention"]


@pytest.mark.parametrize("problem,message", [
    (DECODE, "problem: expected an object with exactly batch, q_heads, kv_heads, head_dim, "
             "seq_len, kv_len, causal"),
    ({**PREFILL, "seq_len": 0}, "problem.seq_len: expected an integer"),
    ({**PREFILL, "causal": "yes"}, "problem.causal: expected true or false"),
    ({**PREFILL, "kv_len": 1024}, "problem.kv_len: expected at least seq_len 4096"),
])
def test_a_malformed_prefill_entry_is_one_line_naming_the_field(problem: dict,
                                                                message: str) -> None:
    bad = {**prefill(), "problem": problem}
    with pytest.raises(KBError) as info:
        validate_entry(bad, where="kb.json: entries[0]")
    text = str(info.value)
    assert text.startswith("kb.json: entries[0]: ") and message in text and "\n" not in text


def test_a_sliding_window_entry_is_keyed_by_its_window(tmp_path: Path) -> None:
    kb = KnowledgeBase()
    assert kb.merge(prefill()).outcome == "added"
    assert kb.merge(prefill(window=1024)).outcome == "added"  # not the full layer's entry
    path = tmp_path / "kb.json"
    kb.save(path)
    again = KnowledgeBase.load(path)
    hit = lookup_layer_op(again, SOC, "prefill_attention", "fp16", {**PREFILL, "window": 1024})
    assert hit is not None and hit["problem"]["window"] == 1024
    assert "window" not in lookup_layer_op(again, SOC, "prefill_attention", "fp16",
                                           PREFILL)["problem"]
    with pytest.raises(KBError, match="problem.window: expected an integer"):
        validate_entry(prefill(window=0), "kb.json: entries[0]")
