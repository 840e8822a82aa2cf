"""A kernel set's catlass instantiations in one header: one namespace per distinct kernel,
each the chain the npu backend renders for that config."""

from __future__ import annotations

import re

import pytest

from aoe_optuna.backends.npu.catlass.args import catlass_args
from aoe_optuna.backends.npu.catlass.render import type_lines
from aoe_optuna.export.catlass_kernel_set import catlass_kernel_set
from aoe_optuna.export.kernel_set_header import DispatchRange, OperatorDispatch
from aoe_optuna.export.kernel_source import ExportError
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config

PROFILE = load_profile("Ascend910B2")
BASE = {**default_config(), "pipeline": 2, "l1_prefetch": 1, "output_align": 1}
KERNELS = [{**BASE, "tile_m": 64, "tile_n": 192, "tile_k": 64, "l1_k": 512},
           {**BASE, "tile_m": 160, "tile_n": 192, "tile_k": 64, "l1_k": 256, "split_k": 4},
           {**BASE, "tile_m": 128, "tile_n": 256, "tile_k": 64, "l1_k": 256, "preload": 1,
            "layout_b": "zN"}]
OPS = [OperatorDispatch("Ascend910B2", "CatlassGemm", "fp16", 3584, 4608, "qkv_proj",
                        (DispatchRange(1, 64, 0), DispatchRange(65, 256, 1))),
       OperatorDispatch("Ascend910B2", "CatlassGemm", "fp16", 3584, 3584, "o_proj",
                        (DispatchRange(1, 32, 2), DispatchRange(33, 256, 0)))]


def test_each_kernel_is_the_backends_own_chain_in_its_namespace():
    text = catlass_kernel_set(KERNELS, OPS, PROFILE, "3 kernels")
    assert "constexpr uint32_t kKernelCount = 3;" in text
    for j, config in enumerate(KERNELS):
        body = text.split(f"namespace k{j} {{")[1].split(f"}}  // namespace k{j}")[0]
        for line in type_lines(catlass_args(config, PROFILE, "fp16")):
            assert line in body
    assert text.count("struct FixedSplitkMatmul") == 1  # the split-K kernel's helper, once
    assert "// serves qkv_proj M 1..64; o_proj M 33..256" in text
    assert "kArgs = AOE_CATLASS_ARGS_SPLITK" in text
    includes = re.findall(r'#include "([^"]+)"', text)
    assert len(includes) == len(set(includes))
    assert "catlass/gemm/kernel/splitk_matmul.hpp" in includes
    assert "catlass/gemm/kernel/basic_matmul_preload.hpp" in includes


def test_a_kernel_catlass_lacks_or_two_element_types_are_one_line():
    bad = [{**KERNELS[0], "pipeline": 1}]
    with pytest.raises(ExportError, match=r"kernel 0 .*pipeline=1") as exc:
        catlass_kernel_set(bad, OPS[:1], PROFILE)
    assert "\n" not in str(exc.value)
    mixed = [OPS[0], OperatorDispatch("Ascend910B2", "CatlassGemm", "bf16", 1, 1, "x",
                                      (DispatchRange(1, 1, 0),))]
    with pytest.raises(ExportError, match="one element type"):
        catlass_kernel_set(KERNELS, mixed, PROFILE)
