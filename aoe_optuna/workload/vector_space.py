"""The tiling space of a vector-core kernel (norms, SwiGLU, rope) and the rules on it.

Parameters, as an Ascend C vector kernel takes them from its host tiling (their
choices, which the knowledge base checks entries against too:
:func:`aoe_optuna.workload.vector_ops.vector_tiling`):

* ``tile_len``: elements of one UB tile per tensor (a norm tile holds whole
  rows when the row fits, else it walks a row in pieces and reads it twice:
  once for the sum of squares, once to scale it);
* ``cores``: vector cores the rows are dealt to (the launch's block dim);
* ``double_buffer``: two UB buffers per queue (Ascend C ``TQue`` depth 2), so
  the next tile's copy-in overlaps this tile's compute;
* ``fused`` (add + RMSNorm only): one kernel for the residual add and the
  norm (CANN's AddRmsNorm) instead of an Add then an RmsNorm.

Rules (an infeasible config is never measured):

* UB: every row tensor's tile in the input dtype, times the buffers, plus two
  fp32 working tiles (the cast and the squares/sigmoid), within the UB of one
  vector core;
* cores: no more than the SoC's vector cores, and no more than the units of
  work (a norm's rows: one core owns a row, as CANN's RmsNorm deals rows; an
  elementwise kernel's tiles).
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.hardware.capacity import CapacityRule
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.constraints import Columns, Rule
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.vector_ops import VectorOp, vector_tiling

WORK_BYTES = 4  # fp32 compute tiles
WORK_TILES = 2


def vector_params(op: VectorOp) -> list[Param]:
    return [Param.generic(name, values) for name, values in vector_tiling(op.kind).items()]


def work_units(op: VectorOp, tile_len: np.ndarray) -> np.ndarray:
    """Units the cores share: a norm's rows, an elementwise kernel's tiles."""
    if op.is_norm:
        return np.full_like(tile_len, op.rows)
    return -(-op.elements // tile_len)


def ub_bytes(op: VectorOp, c: Columns) -> np.ndarray:
    """UB one vector core needs: row-tensor tiles x buffers, plus fp32 working tiles."""
    b = DTYPE_BYTES[op.dtype]
    tensors = op.reads + op.writes
    buffers = np.where(c["double_buffer"] != 0, 2, 1)
    return c["tile_len"] * (tensors * b * buffers + WORK_TILES * WORK_BYTES)


def vector_rules(profile: SocProfile, op: VectorOp) -> list[Rule]:
    """UB capacity, the SoC's vector cores, and no core without work."""
    return [
        CapacityRule("UB", frozenset({"tile_len", "double_buffer"}), profile.ub_bytes,
                     lambda c: ub_bytes(op, c)),
        CapacityRule("vector_cores", frozenset({"cores"}), profile.vector_cores,
                     lambda c: np.asarray(c["cores"])),
        _UnitsRule(op),
    ]


class _UnitsRule:
    """``cores`` <= the units of work: a core with nothing to do is not launched."""

    name = "cores_units"
    variables = frozenset({"cores", "tile_len"})

    def __init__(self, op: VectorOp) -> None:
        self.op = op

    def violation(self, columns: Columns) -> np.ndarray:
        units = work_units(self.op, np.asarray(columns["tile_len"]))
        return np.asarray(columns["cores"], dtype=float) / units - 1.0

    def describe(self, columns: Columns) -> str:
        cores = int(np.asarray(columns["cores"]).ravel()[0])
        units = int(work_units(self.op, np.asarray(columns["tile_len"])).ravel()[0])
        return f"cores_units: {cores} cores for {units} units of work"


def vector_space(profile: SocProfile, op: VectorOp) -> SearchSpace:
    """One SearchSpace: samplers, exhaustive search and the checks see one feasible set."""
    return SearchSpace(vector_params(op), vector_rules(profile, op))


def default_config(profile: SocProfile, op: VectorOp) -> dict[str, int]:
    """The reference tiling tuning is compared with: every vector core that has work,
    double buffering, the largest tile UB holds, the fused kernel where one exists.

    What a library kernel's host tiling typically does; an assumption, not read
    from CANN's tiling code.
    """
    space = vector_space(profile, op)
    rows = space.configs(space.all_feasible())
    preferred = [c for c in rows if c["double_buffer"] == 1 and c.get("fused", 1) == 1]
    pool = preferred or rows
    if not pool:
        raise ValueError(f"{op.label}: no feasible tiling on {profile.soc}")
    return max(pool, key=lambda c: (c["cores"], c["tile_len"]))
