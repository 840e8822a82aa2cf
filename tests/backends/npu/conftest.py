"""The header trees of the Ascend C compile checks, shared by every module that compiles
(test_ascendc_compile.py, test_vector_kernel_compile.py)."""

from __future__ import annotations

import pytest

from tests.backends.npu.ascendc_check import HeaderTrees, generate_kernel_tiling, source_trees


@pytest.fixture(scope="session")
def trees(tmp_path_factory: pytest.TempPathFactory) -> HeaderTrees:
    """The checkouts, with kernel_tiling.h generated once per session outside them.

    Only modules that called ``skip_unless_compilable`` at import ask for it, so the
    trees are there.
    """
    devkit, tools = source_trees()
    generated = generate_kernel_tiling(devkit, tmp_path_factory.mktemp("ascendc_generated"))
    return HeaderTrees(devkit, tools, generated)
