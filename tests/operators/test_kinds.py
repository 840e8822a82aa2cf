"""The operator kinds behind one protocol: one registry maps each problem and each stored
plan to its kind, every kind's problem survives its plan, its CANN default is a feasible
point of its own space that the model times no faster than the bound, and the operator
code never asks a problem its type."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import aoe_optuna.operators as operators_pkg
from aoe_optuna.export.kb_entry import PROBLEM_FIELDS, KBError, make_layer_entry
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.kinds.registry import (
    GEMM,
    LAYER_KINDS,
    kind_of,
    kind_of_op,
    kind_of_plan,
)
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.shapes import OperatorShape
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.gemm import Gemm
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.vector_ops import VectorOp

PROFILE = load_profile("Ascend910B2")
PROBLEMS = [
    DecodeAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, context=1024),
    DecodeAttention(batch=2, q_heads=8, kv_heads=8, head_dim=64, context=512, page_tokens=64,
                    kv_layout="BSND"),
    DecodeAttention(batch=4, q_heads=32, kv_heads=8, head_dim=128, context=2048, q_tokens=4),
    MlaDecodeAttention(batch=1, q_heads=16, context=1024, kv_lora_rank=512,
                       qk_rope_head_dim=64),
    PrefillAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, seq_len=1024),
    PrefillAttention(batch=1, q_heads=16, kv_heads=8, head_dim=128, seq_len=512, kv_len=1024,
                     window=256, causal=True),
    PrefillAttention(batch=1, q_heads=16, kv_heads=16, head_dim=192, seq_len=512,
                     v_head_dim=128, causal=False),
    VectorOp("rmsnorm", 1, 3584),
    VectorOp("rope", 4, 3584, "bf16", 64),
    MoeGating(16, 128, 8),
]


def test_each_problem_type_has_exactly_one_kind_and_an_unknown_one_is_named() -> None:
    types = [k.problem_type for k in LAYER_KINDS]
    assert len(set(types)) == len(types) == 5
    assert {type(kind_of(p)).__name__ for p in PROBLEMS} == {
        "DecodeAttentionKind", "MlaAttentionKind", "PrefillAttentionKind", "VectorKind",
        "MoeGatingKind"}
    with pytest.raises(ValueError, match=r"^no operator kind tunes a Gemm; known: ") as err:
        kind_of(Gemm(1, 2, 3))
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: type(p).__name__)
def test_plan_round_trip_and_kb_op(problem) -> None:
    dtype = "bf16" if getattr(problem, "dtype", "fp16") == "bf16" else "fp16"
    op = LayerOperator(problem, dtype, ("a", "b/a"), 3)
    plan = op.plan_entry("run")
    again = LayerOperator.from_plan(plan)
    assert again == op and again.operator_kind is op.operator_kind
    assert again.study_name("run") == plan["study"]
    assert kind_of_plan(plan) is op.operator_kind
    assert kind_of_op(op.op_name) is op.operator_kind
    assert ("op" in plan) == op.operator_kind.names_op_in_plan
    entry = make_layer_entry("Ascend910B2", op.operator_kind.part, op.op_name, dtype,
                             op.problem_doc(), op.default_config(PROFILE), 1.0, None, "run",
                             None)
    assert entry["problem"] == op.problem_doc()  # the knowledge base takes what the kind keys


@pytest.mark.parametrize("problem", PROBLEMS, ids=lambda p: type(p).__name__)
def test_the_knowledge_base_knows_each_kinds_tiling_space(problem) -> None:
    """An entry's config is checked against the tiling its op's problem declares
    (``ProblemFields.tiling``): the kind's space, parameter for parameter, each choice in
    the declared values (None: an integer from 1 up)."""
    dtype = "bf16" if getattr(problem, "dtype", "fp16") == "bf16" else "fp16"
    op = LayerOperator(problem, dtype, ("a",), 1)
    space = op.space(PROFILE)
    tiling = PROBLEM_FIELDS[op.op_name].tiling
    assert list(tiling) == list(space.names)
    for param in space.params:
        domain = tiling[param.name]
        assert all(v in domain if domain is not None else isinstance(v, int) and v >= 1
                   for v in param.choices), param.name
    config = op.default_config(PROFILE)
    entry = make_layer_entry("Ascend910B2", op.operator_kind.part, op.op_name, dtype,
                             op.problem_doc(), config, 1.0, None, "run", None)
    assert entry["config"] == config
    with pytest.raises(KBError, match=r"config: expected the op's tiling parameters"):
        make_layer_entry("Ascend910B2", op.operator_kind.part, op.op_name, dtype,
                         op.problem_doc(), {**config, "bogus": 1}, 1.0, None, "run", None)


def test_plans_written_before_op_was_stored_keep_their_kind() -> None:
    decode = {"kind": "attention", "dtype": "fp16", "names": ["attention"], "weight": 28,
              "problem": {"batch": 1, "q_heads": 28, "kv_heads": 4, "head_dim": 128,
                          "context": 1024, "page_tokens": 128, "kv_layout": "BNSD"}}
    assert isinstance(LayerOperator.from_plan(decode).problem, DecodeAttention)
    with pytest.raises(ValueError, match=r"^plan: no operator kind for op 'softmax_topk'"):
        kind_of_plan({**decode, "op": "softmax_topk"})
    assert kind_of_op("GemmKernel") is None


@pytest.mark.parametrize("problem", [PROBLEMS[0], PROBLEMS[2], PROBLEMS[3], PROBLEMS[6],
                                     PROBLEMS[8]],
                         ids=lambda p: type(p).__name__)
def test_default_is_feasible_and_timed_no_faster_than_the_bound(problem) -> None:
    kind = kind_of(problem)
    space = kind.space(PROFILE, problem)
    default = kind.default_config(PROFILE, problem)
    assert bool(space.is_feasible(space.index(default))), space.explain(default)
    seconds = kind.model(PROFILE, problem)(space.full_config(default))
    assert kind.roofline_s(PROFILE, problem) <= kind.bound_s(PROFILE, problem) <= seconds


def test_gemm_shape_answers_through_its_kind() -> None:
    shape = OperatorShape(M=1, K=3584, N=4608, dtype="bf16", names=("qkv",), weight=28,
                          batch=2)
    assert shape.operator_kind is GEMM and shape.kind == "gemm"
    assert shape.dims == "1x4608x3584-bf16-b2"
    assert shape.bound_s(PROFILE) > shape.roofline_s(PROFILE) == shape.gemm.roofline_s(PROFILE)
    assert shape.group(PROFILE) == "bf16/memory"
    assert GEMM.kb_op("Gemm", 2) == "Gemm-batch2" and GEMM.kb_op("Gemm", 1) == "Gemm"


def test_operator_code_never_asks_a_problem_its_type() -> None:
    """No ``isinstance`` in aoe_optuna/operators names a problem type: a new kind is a
    module and a registry line, not a branch in the layer code."""
    problem_types = {k.problem_type.__name__ for k in LAYER_KINDS} | {"Gemm"}
    root = Path(operators_pkg.__file__).parent
    asked = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Name)
                    and node.func.id == "isinstance" and len(node.args) == 2):
                names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
                if names & problem_types:
                    asked.append(f"{path.relative_to(root)}:{node.lineno}")
    assert len(list(root.rglob("*.py"))) > 10  # the scan saw the package
    assert asked == []
