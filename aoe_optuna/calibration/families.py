"""The kernel family of a measured row, a GEMM config or a layer problem: what a chip
calibration fits constants for, one family at a time.

:func:`family_of` is the one answer the calibration, its splits and the simulator's
prior ask: a GEMM config's template and dispatch policy (split-K, the padding kernels in
front, Preload, ping-pong), the library's kernel where no tiling is given, or an
attention or vector problem's knowledge base op. The rule is
:mod:`aoe_optuna.space.kernel_families`', which the simulator applies to a calibrated
profile's constants below this layer.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from aoe_optuna.aicore.layer_models import LAYER_MODELS
from aoe_optuna.calibration.band_kinds import GEMM_LIBRARY as BAND_GEMM_LIBRARY
from aoe_optuna.calibration.band_kinds import GEMM_TILED, layer_kind
from aoe_optuna.space.kernel_families import (
    FAMILY_PARAMS,
    GEMM_FAMILIES,
    GEMM_LIBRARY,
    GEMM_PADDING,
    GEMM_PINGPONG,
    GEMM_PRELOAD,
    GEMM_SPLIT_K,
    gemm_family,
    layer_family,
)

__all__ = ["FAMILIES", "FAMILY_PARAMS", "GEMM_FAMILIES", "GEMM_LIBRARY", "GEMM_PADDING",
           "GEMM_PINGPONG", "GEMM_PRELOAD", "GEMM_SPLIT_K", "LAYER_FAMILIES", "band_kind",
           "family_of", "is_gemm"]

# every attention and vector problem's knowledge base ops, in the band kinds' order
LAYER_FAMILIES: tuple[str, ...] = tuple(op for problem in LAYER_MODELS
                                        for op in problem.KB_FIELDS)
FAMILIES: tuple[str, ...] = GEMM_FAMILIES + LAYER_FAMILIES


def family_of(kernel: Mapping[str, Any] | Any | None) -> str:
    """The family of a GEMM config (a mapping of its parameters; ``None`` or empty: the
    library's kernel, its tiling not given) or of an attention or vector problem."""
    if kernel is None or isinstance(kernel, Mapping):
        return gemm_family(kernel)
    return layer_family(kernel)


def is_gemm(family: str) -> bool:
    return family in GEMM_FAMILIES


def band_kind(family: str) -> str:
    """The error band kind whose held-out figures a family's kernels are checked by."""
    if family == GEMM_LIBRARY:
        return BAND_GEMM_LIBRARY
    if is_gemm(family):
        return GEMM_TILED
    return layer_kind(family)
