"""The MoE router's gating (softmax over the experts, then the top k, per token) as a
problem a tuned vector kernel solves, its tiling space, its rules and CANN's default.

The router GEMM gives each token one logit per routed expert; the gating kernel
(CANN's MoeGatingTopKSoftmax) turns each row of logits into the ``top_k`` largest
softmax weights, their expert indices and the row indices the dispatch reads. It
runs on the vector cores: rows are dealt to cores, each core walks its rows
through UB a tile at a time.

Parameters, as the kernel's host tiling sets them (``MoeGatingTopKSoftmaxPerfTiling``
in ops-transformer's ``moe/moe_gating_top_k_softmax/op_host/
moe_gating_top_k_softmax_tiling_perf.cpp``, the template for E <= 1024, E % 8 == 0,
k <= 8, which Qwen3-MoE's 128 experts and 8 active take):

* ``cores``: the block dim; each core takes ``ceil(rows / cores)`` rows
  (``blockFormer``);
* ``tile_rows``: rows of one UB pass (``ubFormer``);
* ``col_tile``: elements of the expert axis per UB pass; shorter than the row (32
  aligned, ``colAlign``), a row is walked in pieces: its softmax reads it twice
  (max and sum, then the weights) and top-k merges each piece's candidates;
* ``double_buffer``: two input buffers (the next tile's copy-in under this one's
  compute).

Rules (an infeasible tiling is never measured): UB as the host tiling counts it
(``isBufferSizeEnough``: fp32 tiles of ``tile_rows`` x ``col_tile``, one per
input buffer and four more for the outputs and scratch, the row-index output,
the ``finished`` flags and 96 bytes); no more cores than the SoC's vector cores or
than rows; no tile larger than a core's rows or than the aligned row.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np

from aoe_optuna.hardware.capacity import CapacityRule
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.constraints import Columns, Rule
from aoe_optuna.space.layer_problem import ProblemFields
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.architecture import Architecture

INDEX_BYTES = 4  # int32 expert and row indices
FP32_BYTES = 4
ALIGN = 32  # the host tiling aligns the expert axis to 32 elements (calcGatingAlignCol)
BLOCK_BYTES = 32
FIXED_UB_BYTES = 96 + 2 * BLOCK_BYTES  # BUFFER_SIZE and the double-buffered finished flags
OUTPUT_TILES = 4  # y and expert_idx, two scratch tiles: fp32 tiles beside the inputs
TILE_ROWS = (1, 2, 4, 8, 16, 32, 64, 128, 256)
COL_TILES = (32, 64, 128, 256, 512, 1024)
CORES = (1, 2, 4, 8, 16, 24, 32, 40, 48)


@dataclass(frozen=True)
class MoeGating:
    """``rows`` tokens' router logits over ``experts`` experts: softmax, then the top
    ``top_k`` weights and indices of each row."""

    part: ClassVar[str] = "vector"
    kind: ClassVar[str] = "moe_gating"
    KB_OP: ClassVar[str] = "moe_gating"
    KB_FIELDS: ClassVar[dict[str, ProblemFields]] = {
        KB_OP: ProblemFields("vector", ("rows", "experts", "top_k"),
                             # rows and cores take CANN's own value beside these lists
                             tiling={"tile_rows": None, "col_tile": COL_TILES, "cores": None,
                                     "double_buffer": (0, 1)})}

    rows: int
    experts: int
    top_k: int
    dtype: str = "fp16"

    def __post_init__(self) -> None:
        if min(self.rows, self.experts, self.top_k) < 1 or self.top_k > self.experts:
            raise ValueError(f"moe gating: rows, experts and top_k must be >= 1 and top_k "
                             f"at most experts, got {self}")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"moe gating: dtype expected one of {list(DTYPE_BYTES)}")

    @property
    def col_align(self) -> int:
        """The expert axis as the kernel lays it out in UB: a multiple of 32."""
        return -(-self.experts // ALIGN) * ALIGN

    @property
    def out_row_bytes(self) -> int:
        """One row's outputs: k weights in the input dtype, k expert and k row indices."""
        return self.top_k * (DTYPE_BYTES[self.dtype] + 2 * INDEX_BYTES)

    @property
    def min_bytes(self) -> float:
        """The logits read once, the outputs written once."""
        return float(self.rows * (self.experts * DTYPE_BYTES[self.dtype] + self.out_row_bytes))

    def roofline_s(self, profile: SocProfile) -> float:
        return self.min_bytes / profile.hbm_bandwidth()

    @property
    def label(self) -> str:
        return f"moe_gating {self.rows}x{self.experts} top{self.top_k}"


def step_gating(arch: Architecture, phase: str, batch: int, seq_len: int,
                dtype: str) -> list[tuple[MoeGating, int]]:
    """The gating calls of one forward step, with their count: one per MoE layer over
    every token (the router is not split by ``tp``: each card gates all its tokens);
    none for a dense model."""
    if arch.experts is None:
        return []
    tokens = batch if phase == "decode" else batch * seq_len
    e = arch.experts
    return [(MoeGating(tokens, e.routed, e.per_token, dtype), arch.moe_layers)]


# ----------------------------------------------------------------- the tiling space
def _rows_per_core(p: MoeGating, cores: int) -> int:
    return -(-p.rows // cores)


def cann_tiling(profile: SocProfile, p: MoeGating) -> dict[str, int]:
    """CANN's host tiling: rows shared over every vector core (``blockFormer``, then the
    cores that take rows, ``blockNum``), the whole aligned row per pass, double
    buffered, and as many of a core's rows per pass as UB holds (``calcMaxRowInUb``:
    the core's rows split in 1, 2, 3... passes until one fits)."""
    former = _rows_per_core(p, profile.vector_cores)
    cores = -(-p.rows // former)
    col = min(p.col_align, COL_TILES[-1])
    for passes in range(1, former + 1):
        rows = -(-former // passes)
        if ub_needed(p, rows, col, 2) <= profile.ub_bytes:
            return {"tile_rows": rows, "col_tile": col, "cores": cores, "double_buffer": 1}
    raise ValueError(f"{p.label}: no row of {col} fits the UB of {profile.soc}")


def ub_needed(p: MoeGating, tile_rows: np.ndarray | int, col_tile: np.ndarray | int,
              buffers: np.ndarray | int) -> np.ndarray | int:
    """UB bytes of one core, as the host tiling's ``isBufferSizeEnough`` counts them."""
    row_idx = tile_rows * (-(-p.top_k * INDEX_BYTES // BLOCK_BYTES) * BLOCK_BYTES)
    general = tile_rows * col_tile * FP32_BYTES * (buffers + OUTPUT_TILES)
    return general + row_idx + FIXED_UB_BYTES


def gating_params(profile: SocProfile, p: MoeGating) -> list[Param]:
    """The choices, CANN's own values among them (its rows per pass and cores need not
    be a power of two)."""
    cann = cann_tiling(profile, p)
    return [Param.generic("tile_rows", tuple(sorted({*TILE_ROWS, cann["tile_rows"]}))),
            Param.generic("col_tile", COL_TILES),
            Param.generic("cores", tuple(sorted({*CORES, cann["cores"]}))),
            Param.generic("double_buffer", (0, 1))]


class _ShareRule:
    """No idle core, no tile larger than a core's rows or than the aligned row: each such
    tiling runs as a smaller one does."""

    name = "gating_share"
    variables = frozenset({"cores", "tile_rows", "col_tile"})

    def __init__(self, p: MoeGating) -> None:
        self.p = p

    def _excess(self, columns: Columns) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        cores = np.asarray(columns["cores"], dtype=float)
        per_core = np.ceil(self.p.rows / cores)
        return (cores / self.p.rows, np.asarray(columns["tile_rows"]) / per_core,
                np.asarray(columns["col_tile"]) / self.p.col_align)

    def violation(self, columns: Columns) -> np.ndarray:
        cores, rows, cols = self._excess(columns)
        return np.maximum(np.maximum(cores, rows), cols) - 1.0

    def describe(self, columns: Columns) -> str:
        names = ("cores over the rows", "tile_rows over a core's rows",
                 "col_tile over the aligned row")
        ratios = [float(np.asarray(r).ravel()[0]) for r in self._excess(columns)]
        return "gating_share: " + "; ".join(n for n, r in zip(names, ratios, strict=True)
                                            if r > 1.0)


def gating_rules(profile: SocProfile, p: MoeGating) -> list[Rule]:
    return [
        CapacityRule("UB", frozenset({"tile_rows", "col_tile", "double_buffer"}),
                     profile.ub_bytes,
                     lambda c: np.asarray(ub_needed(p, c["tile_rows"], c["col_tile"],
                                                    np.where(c["double_buffer"] != 0, 2, 1)))),
        CapacityRule("vector_cores", frozenset({"cores"}), profile.vector_cores,
                     lambda c: np.asarray(c["cores"])),
        _ShareRule(p),
    ]


def gating_space(profile: SocProfile, p: MoeGating) -> SearchSpace:
    """One SearchSpace: samplers, exhaustive search and the checks see one feasible set."""
    return SearchSpace(gating_params(profile, p), gating_rules(profile, p))

