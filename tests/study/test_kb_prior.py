"""A knowledge base as a study's prior: which entries it takes, and how far each lies."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import make_entry
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.prior_of import OTHER_SOC, PriorError, kb_prior

ROOT = Path(__file__).resolve().parents[2]
QWEN = ROOT / "studies" / "qwen25_7b_decode_910b2.json"  # decode, batch 1: M = 1
A = {"tile_m": 16, "tile_k": 112, "tile_n": 256, "pipeline": 1, "l1_prefetch": 1,
     "output_align": 1}
B = {**A, "tile_k": 64, "pipeline": 2}


def _kb(path: Path, *entries: dict) -> Path:
    kb = KnowledgeBase()
    for e in entries:
        kb.merge(e)
    kb.save(path)
    return path


def test_the_entry_nearest_the_studys_shapes_ranks_first(tmp_path: Path) -> None:
    spec = load_spec(str(QWEN))
    near = make_entry("Ascend910B2", "GemmKernel", "fp16", 2, 3584, 3584, "row_major", A,
                      80.0, None, "s", None)  # one doubling of M from the study's q/o shape
    far = make_entry("Ascend910B4", "GemmKernel", "fp16", 1, 3584, 3584, "row_major", B,
                     90.0, None, "s", None)  # the study's shape, another SoC
    far_away = make_entry("Ascend910B4", "GemmKernel", "fp16", 64, 3584, 3584, "row_major",
                          B, 90.0, None, "s", None)
    prior = kb_prior(_kb(tmp_path / "kb.json", near, far_away), spec)
    rows = np.stack([spec.space.index(A), spec.space.index(B)])
    got = prior.predict(spec.space, rows)
    assert got[0] > got[1]  # A's entry is a doubling away, B's six and another SoC
    assert got[0] == pytest.approx(-1.0)
    prior = kb_prior(_kb(tmp_path / "kb2.json", near, far), spec)
    assert prior.predict(spec.space, rows)[1] == pytest.approx(-OTHER_SOC ** 2)


def test_other_ops_and_kinds_are_left_out_and_a_bad_file_is_one_line(tmp_path: Path) -> None:
    spec = load_spec(str(QWEN))
    other = make_entry("Ascend910B2", "Other", "fp16", 1, 3584, 3584, "row_major", A,
                       80.0, None, "s", None)
    with pytest.raises(PriorError, match="expected an entry of op GemmKernel, holds none of 1"):
        kb_prior(_kb(tmp_path / "kb.json", other), spec)
    (tmp_path / "x.json").write_text(json.dumps({"format": "something else"}))
    with pytest.raises(PriorError, match=r"prior.kb: .*x.json: not a knowledge base") as err:
        kb_prior(tmp_path / "x.json", spec)
    assert "\n" not in str(err.value)
