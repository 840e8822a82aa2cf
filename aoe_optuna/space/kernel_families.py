"""Which kernel family a GEMM config or a layer problem belongs to: the one rule.

A chip calibration fits its constants per family (``aoe-tune calibrate``), because
one efficiency scale and one launch overhead cannot serve two templates whose
pipelines differ: catlass's ping-pong and Preload dispatch policies, its padding
kernel (the vector cores pad the operands behind a barrier before the cube starts)
and its split-K kernel (a vector pass sums the partials after it), and a library's
kernel whose tiling is not given. Each attention and vector problem is its
knowledge base op's family. The rule lives in the lowest layer that holds configs
and problems, because the simulator below the calibration applies the constants a
profile holds per family with the same rule; :mod:`aoe_optuna.calibration.families`
is its face for rows, configs and problems.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

GEMM_LIBRARY = "gemm_library"  # a library kernel: the tiling is not given
GEMM_PINGPONG = "gemm_pingpong"  # MmadAtlasA2Pingpong, the cube alone
GEMM_PRELOAD = "gemm_preload"  # MmadAtlasA2Preload: the next block's load streams ahead
GEMM_PADDING = "gemm_padding"  # the padding kernels in front of the matmul
GEMM_SPLIT_K = "gemm_split_k"  # the split-K kernel and its vector reduction

# The tiled families in the order a config's template is decided: split-K and padding
# are kernels of their own whatever their dispatch policy, then Preload, else ping-pong.
GEMM_TILED_FAMILIES: tuple[str, ...] = (GEMM_SPLIT_K, GEMM_PADDING, GEMM_PRELOAD,
                                        GEMM_PINGPONG)
GEMM_FAMILIES: tuple[str, ...] = (GEMM_LIBRARY, GEMM_PINGPONG, GEMM_PRELOAD, GEMM_PADDING,
                                  GEMM_SPLIT_K)
# The parameters the rule reads (and their values when a config leaves them out).
FAMILY_PARAMS: dict[str, int] = {"split_k": 1, "padding": 0, "preload": 0}


def gemm_family_index(columns: Mapping[str, Any]) -> np.ndarray:
    """Per config row (numpy columns of the simulator, or one config's scalars), the
    index into :data:`GEMM_TILED_FAMILIES` of its kernel family."""
    split = np.asarray(columns.get("split_k", FAMILY_PARAMS["split_k"])) > 1
    pad = np.asarray(columns.get("padding", FAMILY_PARAMS["padding"])) != 0
    pre = np.asarray(columns.get("preload", FAMILY_PARAMS["preload"])) != 0
    return np.select([split, pad, pre], [0, 1, 2], default=3)


def gemm_family(config: Mapping[str, Any] | None) -> str:
    """The family of one GEMM kernel: its config's template, or the library's kernel when
    no tiling is given (``None`` or an empty config)."""
    if not config:
        return GEMM_LIBRARY
    return GEMM_TILED_FAMILIES[int(gemm_family_index(config))]


def layer_family(problem: Any) -> str:
    """The family of an attention or vector problem: its knowledge base op (a vector
    kernel's kind where that is one of its ops, else its one op)."""
    ops = problem.KB_FIELDS
    return problem.kind if problem.kind in ops else next(iter(ops))
