"""The rendered vector kernels (RMSNorm, add + RMSNorm, SwiGLU, rope) compile against the
Ascend C headers in CPU-debug mode with g++, as the GEMM kernel does
(test_ascendc_compile.py, docs/NPU.md "Compile check"); without the headers it skips.

What this checks is the Ascend C API level (tensor, queue, copy and vector-op calls with
their types). The vector-unit intrinsics those calls reach (vadd, vmul, vconv_*, vcadd,
vector_dup, vsqrt...) are untyped in ascendc_decls/stub_fun.h, so their arguments are not
checked: the test lists them rather than failing on them (docs/NPU.md, "Vector kernels").
"""

from __future__ import annotations

import re
from pathlib import Path

from aoe_optuna.backends.npu.layer_kernels.vector_kernel import render_vector_kernel
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.vector_ops import VectorOp
from aoe_optuna.workload.vector_space import default_config
from tests.backends.npu.ascendc_check import (
    HeaderTrees,
    compile_all,
    grouped_kernels,
    skip_unless_compilable,
)

PROFILE = load_profile("Ascend910B3")
ENTRIES = ("aoe_vector_kernel", "aoe_vector_add")
# Intrinsic families the vector kernels may reach untyped (stub_fun.h types the cube's).
UNTYPED_VECTOR = re.compile(r"aoe_untyped::(v[a-z_0-9]+|vector_dup|copy_cbuf_to_gm|"
                            r"AscendCBufGet|get_acc_val)<")

skip_unless_compilable()


def variants() -> dict[str, str]:
    """Every kind, both dtypes, single and double buffered, fused and unfused, a row that
    fits one tile and one walked in pieces."""
    out = {}
    cases = (
        ("rmsnorm_fit", VectorOp("rmsnorm", 8, 4096), {}),
        ("rmsnorm_pieces_bf16", VectorOp("rmsnorm", 8, 8192, "bf16"),
         {"tile_len": 2048, "double_buffer": 0}),
        ("add_rmsnorm_fused", VectorOp("add_rmsnorm", 8, 4096), {}),
        ("add_rmsnorm_unfused_bf16", VectorOp("add_rmsnorm", 8, 8192, "bf16"),
         {"fused": 0, "tile_len": 4096}),
        ("swiglu", VectorOp("swiglu", 8, 11008), {}),
        ("swiglu_bf16_single", VectorOp("swiglu", 8, 11008, "bf16"), {"double_buffer": 0}),
        ("rope", VectorOp("rope", 8, 4096, "fp16", 128), {}),
        ("rope_bf16_hd64", VectorOp("rope", 8, 2048, "bf16", 64), {"tile_len": 1024, "cores": 16}),
    )
    for name, op, changes in cases:
        out[name] = render_vector_kernel(op, {**default_config(PROFILE, op), **changes}, PROFILE)
    return out


def test_every_vector_kernel_compiles_and_a_type_misuse_fails(tmp_path: Path,
                                                              trees: HeaderTrees) -> None:
    kernels = variants()
    base = kernels["rmsnorm_fit"]
    old = "AscendC::Mul(sq, x, x, static_cast<int32_t>(n));"
    assert base.count(old) == 1
    # An fp32 square of the half input tile: no Mul takes mixed element types.
    misused = base.replace(old, "AscendC::Mul(sq, tile, x, static_cast<int32_t>(n));")
    good = tmp_path / "vector.cpp"
    good.write_text(grouped_kernels(kernels, ENTRIES, "vector_kernel.cpp"))
    bad = tmp_path / "misuse.cpp"
    bad.write_text(grouped_kernels({"mixed_mul": misused}, ENTRIES, "vector_kernel.cpp"))
    results = compile_all({"vector": (good, ("-Wall",)), "misuse": (bad, ())}, trees)
    assert results["vector"].ok, results["vector"].output[-6000:]
    unexpected = [u for u in results["vector"].untyped if not UNTYPED_VECTOR.search(u)]
    assert not unexpected, f"untyped intrinsics outside the vector unit: {unexpected}"
    assert not results["misuse"].ok
    assert re.search(r"no matching function for call to .Mul\(", results["misuse"].output)


def test_a_tile_past_the_ub_fails_its_static_assert(tmp_path: Path, trees: HeaderTrees) -> None:
    op = VectorOp("rmsnorm", 8, 4096)
    text = render_vector_kernel(op, default_config(PROFILE, op), PROFILE)
    text = text.replace("constexpr uint32_t TILE_LEN = 8192;",
                        "constexpr uint32_t TILE_LEN = 16384;")
    src = tmp_path / "overflow.cpp"
    src.write_text(grouped_kernels({"overflow": text}, ENTRIES, "vector_kernel.cpp"))
    result = compile_all({"overflow": (src, ())}, trees)["overflow"]
    assert not result.ok
    assert "UB buffer overflow" in result.output
