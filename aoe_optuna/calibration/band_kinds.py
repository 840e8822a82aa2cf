"""The kernel kinds an error band is kept for, and which kind a simulated figure is.

A band is a property of a model, so figures are grouped by the model that
times them: GEMMs whose tiling a library picks (the simulator's best of the
library space stands in for it) apart from GEMMs run with a tiling given, and
every attention and vector problem by its knowledge base op (decode, prefill
and MLA attention, each vector kernel, the MoE router's gating).
"""

from __future__ import annotations

from aoe_optuna.aicore.layer_models import LAYER_MODELS

GEMM_LIBRARY = "gemm_library"
GEMM_TILED = "gemm_tiled"

# Every kind, in the order the tables list them, with the words a table prints.
LABELS: dict[str, str] = {
    GEMM_LIBRARY: "GEMM, library kernel (tiling not given)",
    GEMM_TILED: "GEMM, tiling given",
    **{op: op.replace("_", " ") for problem in LAYER_MODELS for op in problem.KB_FIELDS},
}
KINDS: tuple[str, ...] = tuple(LABELS)


def gemm_kind(tiling_given: bool) -> str:
    return GEMM_TILED if tiling_given else GEMM_LIBRARY


def layer_kind(op_name: str) -> str:
    """The band kind of an attention or vector problem: its knowledge base op."""
    if op_name not in LABELS:
        raise KeyError(f"no band kind for op {op_name!r}: expected one of {list(KINDS)}")
    return op_name
