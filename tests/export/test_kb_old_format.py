"""A knowledge base written before figures were told apart still loads and merges.

``tests/fixtures/kb/kb_2851b8d.json`` was written by the project at commit 2851b8d:
``aoe-tune --config studies/qwen25_7b_decode_910b2.json --kb`` (five shapes, the step's
tokens/s, no ``workload``), ``aoe-tune --config studies/gemm_4096_910b2.toml --kb`` (one
GEMM, labelled tokens/s: its rows per second) and ``aoe-tune operators --config
studies/qwen25_7b_decode_layer_910b2.json --kb`` (five shapes' TFLOPS, an attention and
four vector kernels' calls/s)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_c_header import c_header
from aoe_optuna.export.kb_entry import KBError, make_entry

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "kb" / "kb_2851b8d.json"
DECODE = "qwen2.5-7b decode batch=1 seq_len=1024 tp=1 fp16"


def test_it_loads_as_it_was_and_saves_unchanged(tmp_path: Path) -> None:
    kb = KnowledgeBase.load(OLD)
    assert len(kb) == 16
    assert sorted({e["objective"] for e in kb}) == ["TFLOPS", "calls/s", "tokens/s"]
    assert not any("workload" in e for e in kb)
    copy = tmp_path / "kb.json"
    kb.save(copy)
    assert json.loads(copy.read_text()) == json.loads(OLD.read_text())
    assert "from 11 GEMM entries" in c_header(kb)


def test_a_step_of_a_workload_compares_with_an_old_step_entry_by_value(tmp_path: Path) -> None:
    kb = KnowledgeBase.load(OLD)
    held = next(e for e in kb if e["op"] == "GemmKernel" and e["M"] == 1)
    key = {f: held[f] for f in ("soc", "op", "dtype", "M", "K", "N", "layout")}
    higher = make_entry(**key, config={"tile_m": 32}, value=held["value"] + 1.0, gain=None,
                        study="new", storage=None, workload=DECODE)
    assert kb.merge(higher).outcome == "replaced"


def test_an_old_one_gemm_entry_labelled_tokens_per_s_is_not_compared_with_tflops() -> None:
    kb = KnowledgeBase.load(OLD)
    held = next(e for e in kb if e["M"] == 4096)  # gemm_4096's rows per second
    key = {f: held[f] for f in ("soc", "op", "dtype", "M", "K", "N", "layout")}
    own = make_entry(**key, config={"tile_m": 128}, value=250.0, gain=None, study="g",
                     storage=None, objective="TFLOPS", latency_us=550.0)
    with pytest.raises(KBError, match="tokens/s of a step .* another unit, not comparable"):
        kb.merge(own)
    assert kb.merge(own, replace=True).outcome == "replaced"


def test_an_old_file_with_a_config_outside_its_space_names_file_key_and_expectation(
        tmp_path: Path) -> None:
    data = json.loads(OLD.read_text())
    data["entries"][0]["config"] = {"bogus": 1}
    bad = tmp_path / "kb.json"
    bad.write_text(json.dumps(data))
    with pytest.raises(KBError) as err:
        KnowledgeBase.load(bad)
    assert str(err.value).startswith(
        f"{bad}: entries[0] (Ascend910B2/CatlassDecodeLayer/fp16 1x3584x3584 row_major): "
        "config: expected the GEMM's parameters (tile_m, tile_k, tile_n, ")
    assert str(err.value).endswith("got an unknown parameter 'bogus'")

