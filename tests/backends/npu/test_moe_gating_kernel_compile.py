"""The rendered MoE gating kernel compiles against the Ascend C headers in CPU-debug mode
with g++, as the vector kernels do (test_vector_kernel_compile.py, docs/NPU.md "Compile
check"): a row whole in UB and one in pieces, both dtypes, single and double buffered.
Without the headers it skips, saying so."""

from __future__ import annotations

import re
from pathlib import Path

from aoe_optuna.backends.npu.layer_kernels.moe_gating_kernel import render_gating_kernel
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.moe_gating import MoeGating, cann_tiling
from tests.backends.npu.ascendc_check import (
    HeaderTrees,
    compile_all,
    grouped_kernels,
    skip_unless_compilable,
)

PROFILE = load_profile("Ascend910B3")
ENTRIES = ("aoe_moe_gating",)
UNTYPED_VECTOR = re.compile(r"aoe_untyped::(v[a-z_0-9]+|vector_dup|copy_[a-z_]+|"
                            r"AscendCBufGet|get_acc_val|set_[a-z_]+|get_[a-z_]+)<")

skip_unless_compilable()


def test_every_gating_variant_compiles(tmp_path: Path, trees: HeaderTrees) -> None:
    cases = (
        ("whole_row", MoeGating(64, 128, 8), {}),
        ("pieces_bf16_single", MoeGating(64, 256, 8, "bf16"),
         {"col_tile": 64, "double_buffer": 0}),
        ("many_rows", MoeGating(4096, 64, 6), {}),
    )
    kernels = {name: render_gating_kernel(p, {**cann_tiling(PROFILE, p), **changes}, PROFILE)
               for name, p, changes in cases}
    src = tmp_path / "gating.cpp"
    src.write_text(grouped_kernels(kernels, ENTRIES, "moe_gating_kernel.cpp"))
    result = compile_all({"gating": (src, ("-Wall",))}, trees)["gating"]
    assert result.ok, result.output[-6000:]
    unexpected = [u for u in result.untyped if not UNTYPED_VECTOR.search(u)]
    assert not unexpected, f"untyped intrinsics outside the vector unit: {unexpected}"
