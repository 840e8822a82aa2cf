"""The one list of non-GEMM problems below the operator kinds: each problem says its
part, kind and knowledge base fields; the spec charges any of them through the
simulator's list with the figures each model gives; the workload's layer ops, the spec
and the knowledge base never ask a problem its type nor import one."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aoe_optuna
from aoe_optuna.aicore.attention import decode_attention, mla_attention, prefill_attention
from aoe_optuna.aicore.cann.add_rms_norm import add_rms_norm_seconds
from aoe_optuna.aicore.cann.fia_prefill import fia_prefill_seconds
from aoe_optuna.aicore.cann.library_vector import library_vector_seconds
from aoe_optuna.aicore.cann.mla_decode import cann_mla_decode_seconds
from aoe_optuna.aicore.cann.rms_norm import rms_norm_seconds
from aoe_optuna.aicore.layer_models import LAYER_MODELS, layer_charge
from aoe_optuna.aicore.vector.vector_ops import best_vector_config, default_vector_cost
from aoe_optuna.export.kb_entry import LAYER_KINDS, PROBLEM_FIELDS
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.spec.workload import part_charge
from aoe_optuna.workload.step_operators import LayerOpCall
from aoe_optuna.workload.vector_ops import VectorOp

PROFILE = load_profile("Ascend910B2")
DECODE = DecodeAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, context=1024)
MLA = MlaDecodeAttention(batch=1, q_heads=16, context=1024)
PREFILL = PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=512)
NORM = VectorOp("add_rmsnorm", 4, 3584)
PLAIN_NORM = VectorOp("rmsnorm", 4, 3584)
ROPE = VectorOp("rope", 4, 4096)
ROOT = Path(aoe_optuna.__file__).parent
# The modules that once branched on a problem's type or listed the kinds.
OPEN_MODULES = ("workload/step_operators.py", "spec/workload.py", "export/kb.py")


def test_each_problem_says_its_part_kind_and_fields() -> None:
    for problem, part, kind in ((DECODE, "attention", "attention"),
                                (PREFILL, "attention", "attention"),
                                (NORM, "vector", "add_rmsnorm")):
        call = LayerOpCall("x", problem, "fp16", 2, 1e-6)
        assert (call.part, call.kind) == (part, kind)
    assert list(DecodeAttention.KB_FIELDS) == ["decode_attention"]
    assert PROBLEM_FIELDS["rope"].fields == ("rows", "width", "head_dim")
    assert PROBLEM_FIELDS["prefill_attention"].optional == ("v_head_dim", "window")
    assert set(PROBLEM_FIELDS) == {op for t in LAYER_MODELS for op in t.KB_FIELDS}
    assert LAYER_KINDS == ("attention", "vector")


@pytest.mark.parametrize("charge", ["default", "best"])
def test_the_spec_charges_each_problem_with_its_own_model(charge: str) -> None:
    charged = part_charge(PROFILE, charge)
    assert charged is not None
    assert charged(DECODE) == decode_attention.attention_charge(PROFILE, charge)(DECODE)
    mla = (cann_mla_decode_seconds(PROFILE, MLA) if charge == "default"
           else mla_attention.mla_attention_charge(PROFILE, charge)(MLA))
    assert charged(MLA) == mla
    prefill = (fia_prefill_seconds(PROFILE, PREFILL) if charge == "default"
               else prefill_attention.prefill_attention_charge(PROFILE, charge)(PREFILL))
    assert charged(PREFILL) == prefill
    if charge == "default":  # CANN's norms; a kernel without its model: the default tiling
        assert charged(PLAIN_NORM) == rms_norm_seconds(PROFILE, 4, 3584, "fp16")
        assert charged(NORM) == add_rms_norm_seconds(PROFILE, 4, 3584, "fp16")
        assert charged(ROPE) == default_vector_cost(PROFILE, ROPE)[1].total_s
    else:
        assert charged(NORM) == best_vector_config(PROFILE, NORM)[1].total_s
    assert part_charge(PROFILE, "tuned")(PLAIN_NORM) == library_vector_seconds(PROFILE,
                                                                               PLAIN_NORM)
    assert part_charge(PROFILE, "roofline") is None


def test_a_problem_no_model_charges_is_named_in_one_line() -> None:
    with pytest.raises(ValueError, match=r"^no simulator model charges a str$"):
        layer_charge(PROFILE, "default")("attention")
    with pytest.raises(ValueError, match=r"^charge: expected one of \['default', 'best'\]"):
        layer_charge(PROFILE, "roofline")


@pytest.mark.parametrize("module", OPEN_MODULES)
def test_no_branch_on_a_problem_type_and_no_import_of_one(module: str) -> None:
    problem_types = {t.__name__ for t in LAYER_MODELS}
    tree = ast.parse((ROOT / module).read_text())
    named = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            named += [a.name for a in node.names if a.name in problem_types]
        elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
              and node.func.id == "isinstance"):
            named += [n.id for n in ast.walk(node.args[1])
                      if isinstance(n, ast.Name) and n.id in problem_types]
    assert len(problem_types) >= 4
    assert named == []
