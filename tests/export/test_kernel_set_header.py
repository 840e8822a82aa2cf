"""The kernel set's dispatch header: compiled by gcc and g++, and its dispatch answers what
the Python side says for every M in range and outside it."""

from __future__ import annotations

import shutil
import subprocess

import pytest

from aoe_optuna.export.kernel_set_header import (
    DispatchRange,
    OperatorDispatch,
    distinct_kernels,
    kernel_set_header,
    write_kernel_set_header,
)

CC = shutil.which("gcc")
CXX = shutil.which("g++")
SOC = "Ascend910B2"
CONFIGS = [{"tile_m": 64, "tile_n": 192, "split_k": 1}, {"tile_m": 160, "tile_n": 192},
           {"tile_m": 256, "tile_n": 96, "layout_b": "zN"}]
OPERATORS = [
    OperatorDispatch(SOC, "CatlassGemm", "fp16", 3584, 4608, "qkv_proj",
                     (DispatchRange(1, 64, 0), DispatchRange(65, 160, 1),
                      DispatchRange(161, 256, 2))),
    OperatorDispatch(SOC, "CatlassGemm", "fp16", 3584, 3584, "o_proj",
                     (DispatchRange(1, 7, 1), DispatchRange(8, 8, 0), DispatchRange(9, 256, 1))),
    OperatorDispatch(SOC, "CatlassGemm", "fp16", 3584, 152064, "lm_head",
                     (DispatchRange(1, 1, 2),)),
]
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "aoe_kernel_set.h"

/* argv: soc op dtype k n m_first m_last; one line per m: kernel in_range tile_m */
int main(int argc, char **argv) {
    uint32_t m, k, n, first, last;
    if (argc != 8) return 2;
    k = (uint32_t)strtoul(argv[4], NULL, 10);
    n = (uint32_t)strtoul(argv[5], NULL, 10);
    first = (uint32_t)strtoul(argv[6], NULL, 10);
    last = (uint32_t)strtoul(argv[7], NULL, 10);
    for (m = first; m <= last; ++m) {
        int in_range = -1;
        const aoe_ks_kernel_t *e = aoe_ks_dispatch(argv[1], argv[2], argv[3], k, n, m,
                                                   &in_range);
        if (e == NULL) { printf("none\n"); continue; }
        printf("%u %d %d\n", e->index, in_range, e->tile_m);
    }
    return 0;
}
"""


def test_configs_used_twice_are_one_kernel():
    kernels, index = distinct_kernels([CONFIGS[0], CONFIGS[1], dict(CONFIGS[0]),
                                       {"tile_n": 192, "tile_m": 160}])
    assert index == [0, 1, 0, 1] and len(kernels) == 2


def test_ranges_must_be_contiguous():
    with pytest.raises(ValueError, match="contiguous"):
        OperatorDispatch(SOC, "op", "fp16", 1, 1, "x",
                         (DispatchRange(1, 4, 0), DispatchRange(6, 9, 1)))


@pytest.mark.skipif(CC is None or CXX is None, reason="needs gcc and g++")
def test_dispatch_in_c_matches_python_for_every_m(tmp_path):
    header = tmp_path / "aoe_kernel_set.h"
    write_kernel_set_header(header, CONFIGS, OPERATORS, "a test set")
    (tmp_path / "driver.c").write_text(DRIVER)
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror",
                    "driver.c", "-o", "driver"], cwd=tmp_path, check=True, capture_output=True,
                   timeout=60)
    (tmp_path / "use.cpp").write_text('#include "aoe_kernel_set.h"\n#include "aoe_kernel_set.h"\n'
                                      'int f() { return aoe_ks_dispatch("a", "b", "c", 1, 1, 1, '
                                      "nullptr) == nullptr; }\n")
    subprocess.run([CXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-c", "use.cpp"],
                   cwd=tmp_path, check=True, capture_output=True, timeout=60)
    for op in OPERATORS:
        out = subprocess.run([str(tmp_path / "driver"), SOC, op.op, op.dtype, str(op.K),
                              str(op.N), "0", "300"], capture_output=True, text=True,
                             check=True, timeout=60).stdout.splitlines()
        want = []
        for m in range(0, 301):
            kernel, inside = op.kernel_of(m)
            want.append(f"{kernel} {int(inside)} {CONFIGS[kernel]['tile_m']}")
        assert out == want
        inside = [line for line in out if line.split()[1] == "1"]
        assert len(inside) == op.ranges[-1].high  # every M from 1 to the last range's end
    none = subprocess.run([str(tmp_path / "driver"), SOC, "CatlassGemm", "fp16", "3584",
                           "9999", "1", "2"], capture_output=True, text=True, check=True,
                          timeout=60).stdout.split()
    assert none == ["none", "none"]


def test_a_range_naming_a_missing_kernel_is_refused():
    op = OperatorDispatch(SOC, "op", "fp16", 1, 1, "x", (DispatchRange(1, 4, 3),))
    with pytest.raises(ValueError, match="names kernel 3 of 3"):
        kernel_set_header(CONFIGS, [op])
