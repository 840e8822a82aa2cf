"""MLA attention in the knowledge base: MLA decode entries keyed by their own problem
fields, MLA prefill entries by prefill's plus V's width, older prefill entries (no V
width) unchanged, malformed ones refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, make_layer_entry, validate_entry
from aoe_optuna.export.kb_lookup import lookup_layer_op

SOC = "Ascend910B2"
MLA = {"batch": 1, "q_heads": 16, "kv_lora_rank": 512, "qk_rope_head_dim": 64,
       "context": 4096, "page_tokens": 128}
MLA_TILING = {"head_tile": 16, "kv_split": 16, "block_pages": 1, "resident": 1, "pipeline": 2}
PREFILL = {"batch": 1, "q_heads": 16, "kv_heads": 16, "head_dim": 192, "seq_len": 2048,
           "kv_len": 2048, "causal": True}
PREFILL_TILING = {"q_tile": 128, "kv_tile": 1024, "l1_tile": 256, "pipeline": 2,
                  "dealing": "balanced"}


def entry(op: str, problem: dict, config: dict, value: float = 1.0e5) -> dict:
    return make_layer_entry(SOC, "attention", op, "fp16", problem, config, value, 0.1,
                            f"run/attention/{op}", None, latency_us=1e6 / value,
                            date="2026-01-02T03:04:05+00:00")


def test_mla_decode_and_prefill_entries_round_trip(tmp_path: Path) -> None:
    kb = KnowledgeBase()
    narrow = {**PREFILL, "v_head_dim": 128}
    for e in (entry("mla_decode_attention", MLA, MLA_TILING),
              entry("prefill_attention", narrow, PREFILL_TILING),
              entry("prefill_attention", PREFILL, PREFILL_TILING, 2.0e5)):
        assert kb.merge(e).outcome == "added"
    path = tmp_path / "kb.json"
    kb.save(path)
    again = KnowledgeBase.load(path)
    assert again.entries() == kb.entries()
    hit = lookup_layer_op(again, SOC, "mla_decode_attention", "fp16", MLA)
    assert hit is not None and hit["config"] == MLA_TILING
    assert lookup_layer_op(again, SOC, "mla_decode_attention", "fp16",
                           {**MLA, "context": 8192}) is None
    # V's width keys its own entry; the entry without it is a 192-wide V.
    assert lookup_layer_op(again, SOC, "prefill_attention", "fp16", narrow)["value"] == 1.0e5
    assert lookup_layer_op(again, SOC, "prefill_attention", "fp16", PREFILL)["value"] == 2.0e5


@pytest.mark.parametrize("op,problem,message", [
    ("mla_decode_attention", {k: v for k, v in MLA.items() if k != "page_tokens"},
     "problem: expected an object with exactly batch, q_heads, kv_lora_rank"),
    ("mla_decode_attention", {**MLA, "kv_heads": 1}, "problem: expected an object"),
    ("mla_decode_attention", {**MLA, "kv_lora_rank": 0}, "problem.kv_lora_rank"),
    ("prefill_attention", {**PREFILL, "v_head_dim": -1}, "problem.v_head_dim"),
    ("decode_attention", {**MLA}, "problem: expected an object"),
])
def test_a_malformed_mla_entry_is_refused_in_one_line(op: str, problem: dict,
                                                      message: str) -> None:
    doc = {"kind": "attention", "soc": SOC, "op": op, "dtype": "fp16", "problem": problem,
           "config": MLA_TILING, "value": 1.0, "study": "s",
           "date": "2026-01-02T03:04:05+00:00"}
    with pytest.raises(KBError, match=message) as info:
        validate_entry(doc)
    assert "\n" not in str(info.value)
