"""A knowledge base written by an earlier version still loads, and is checked as any other.

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
from aoe_optuna.export.kb_entry import KBError

OLD = Path(__file__).resolve().parents[1] / "fixtures" / "kb" / "kb_2851b8d.json"


def test_it_loads_as_it_was_and_saves_unchanged(tmp_path: Path) -> None:
    kb = KnowledgeBase.load(OLD)
    assert len(kb) == 16
    assert sorted({e["objective"] for e in kb}) == ["TFLOPS", "calls/s", "tokens/s"]
    assert not any("workload" in e for e in kb)
    copy = tmp_path / "kb.json"
    kb.save(copy)
    assert json.loads(copy.read_text()) == json.loads(OLD.read_text())
    assert "from 11 GEMM entries" in c_header(kb)


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

