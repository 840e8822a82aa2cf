"""The ACL host programs of the npu backend compile with g++ against this project's typed
declarations of the AscendCL calls they make (``acl_decls/acl/acl.h``; the toolkit's
headers are not open source): the GEMM's ``main.cpp`` and the layer kernels'
``vector_bench.cpp`` (every vector kind) and ``gating_bench.cpp``, each in the build tree
its kind renders, with ``-Wall -Wextra -Werror``. The catlass host programs include
catlass, which does not compile with a host compiler (docs/NPU.md, "Compile check").
Needs g++ only: no CANN, no Ascend C headers (the host programs include none)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.backends.npu.kernel_program import NpuTarget
from aoe_optuna.backends.npu.simple_gemm.render import render_project
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.space.params import default_config
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.vector_ops import VectorOp

GXX = shutil.which("g++")
pytestmark = pytest.mark.skipif(GXX is None, reason="needs g++ (apt-get install g++)")
ACL_DECLS = Path(__file__).resolve().parent / "acl_decls"
PROFILE = load_profile("Ascend910B2")
TARGET = NpuTarget(CannToolkit(Path("/usr/local/Ascend/cann"), "8.5.0", "test"), "npu")
FLAGS = ["-std=c++17", "-fsyntax-only", "-Wall", "-Wextra", "-Werror"]


def _compile(tree: Path, source: str) -> subprocess.CompletedProcess[str]:
    assert GXX is not None
    return subprocess.run([GXX, *FLAGS, f"-I{tree}", f"-I{ACL_DECLS}", str(tree / source)],
                          capture_output=True, text=True, timeout=120,
                          env={"PATH": "/usr/bin:/bin", "LC_ALL": "C"})


def _write(tree: Path, files: dict[str, str]) -> Path:
    tree.mkdir(parents=True)
    for name, text in files.items():
        (tree / name).write_text(text)
    return tree


LAYER = {
    "rmsnorm": VectorOp("rmsnorm", 2, 3584, "fp16"),
    "add_rmsnorm": VectorOp("add_rmsnorm", 1, 3584, "bf16"),
    "swiglu": VectorOp("swiglu", 1, 18944, "fp16"),
    "rope": VectorOp("rope", 1, 4096, "bf16", 128),
    "moe_gating": MoeGating(4, 64, 6, "fp16"),
}


@pytest.mark.parametrize("name", sorted(LAYER))
def test_each_layer_host_program_compiles_in_its_tree(tmp_path: Path, name: str) -> None:
    problem = LAYER[name]
    op = LayerOperator(problem, problem.dtype, ("x",), 1)
    program = op.operator_kind.npu_program(problem, problem.dtype,
                                           op.default_config(PROFILE), PROFILE, TARGET)
    source = next(n for n in program.files if n.endswith("_bench.cpp"))
    done = _compile(_write(tmp_path / name, program.files), source)
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_gemm_host_program_compiles_on_its_acl_path(tmp_path: Path) -> None:
    files = render_project(default_config(), "fp16", PROFILE, "npu")
    done = _compile(_write(tmp_path / "gemm", files), "main.cpp")
    assert done.returncode == 0, done.stderr[-3000:]


def test_the_declarations_are_typed(tmp_path: Path) -> None:
    """An int where ACL takes its copy direction, or a double where it writes a float of
    milliseconds, is a compile error: the declarations check what the programs pass."""
    tree = tmp_path / "misuse"
    tree.mkdir()
    (tree / "misuse.cpp").write_text(
        '#include "acl/acl.h"\n'
        "void Copy(void *d, const void *s) { aclrtMemcpy(d, 8, s, 8, 1); }\n"
        "void Time(double *ms, aclrtEvent a, aclrtEvent b) { aclrtEventElapsedTime(ms, a, b); }\n")
    done = _compile(tree, "misuse.cpp")
    assert done.returncode != 0
    assert "invalid conversion from 'int' to 'aclrtMemcpyKind'" in done.stderr
    assert "cannot convert 'double*' to 'float*'" in done.stderr
