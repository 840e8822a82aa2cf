"""The vector-core kernels of a decoder layer: RMSNorm (with or without the residual add),
SwiGLU and rotary embedding, as problems a tuned kernel solves.

Each is a pass over activations in GM with a few vector instructions per
element, so its time is decided by how the rows are dealt to the vector
cores, how large a UB tile is and whether loads overlap compute: the tiling
a kernel such as CANN's AddRmsNorm or SwiGlu chooses per call.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.layer_problem import ProblemFields
from aoe_optuna.workload.architecture import Architecture

# Per kind: GM tensors read, GM tensors written (row-sized), whether a row is a
# reduction (a norm: one core owns a whole row), and vector instructions per element.
# Instruction counts follow the arithmetic (fp16 in, fp32 compute, fp16 out):
#   rmsnorm:     cast, square, reduce-sum, scale by rstd, scale by weight, cast
#   add_rmsnorm: + add and the cast of the residual sum written back
#   swiglu:      2 casts, exp, add, reciprocal, 3 multiplies, cast (silu(g) * u)
#   rope:        cast, 2 multiplies (cos, sin of the rotated half), add, cast
#   add:         2 casts, add, cast (the residual add of an unfused add + RMSNorm)
KINDS: dict[str, tuple[int, int, bool, int]] = {
    "rmsnorm": (1, 1, True, 6),
    "add_rmsnorm": (2, 2, True, 8),
    "swiglu": (2, 1, False, 9),
    "rope": (1, 1, False, 5),
    "add": (2, 1, False, 4),
}
# The tiling space's choices (aoe_optuna.workload.vector_space): elements of one UB
# tile, and vector cores the work is dealt to.
TILE_LENS = (512, 1024, 2048, 4096, 8192, 16384)
CORES = (1, 2, 4, 8, 16, 24, 32, 40, 48)


def vector_tiling(kind: str) -> dict[str, tuple[int, ...]]:
    """The tiling parameters of a vector kernel of ``kind`` and their choices; add +
    RMSNorm may also run as one fused kernel."""
    tiling = {"tile_len": TILE_LENS, "cores": CORES, "double_buffer": (0, 1)}
    if kind == "add_rmsnorm":
        tiling["fused"] = (0, 1)
    return tiling


@dataclass(frozen=True)
class VectorOp:
    """``rows`` x ``width`` elements through one vector kernel of ``kind``.

    ``width`` is the output row: hidden for the norms, the intermediate width
    for SwiGLU (its input row is twice that), the rotated Q and K widths for
    rope (plus a cos and a sin row of ``head_dim`` per token).
    """

    part: ClassVar[str] = "vector"
    # each vector kind is a knowledge base op of its own; rope keys its head_dim too
    KB_FIELDS: ClassVar[dict[str, ProblemFields]] = {
        k: ProblemFields("vector", ("rows", "width") + (("head_dim",) if k == "rope" else ()),
                         tiling=vector_tiling(k))
        for k in sorted(KINDS)}

    kind: str
    rows: int
    width: int
    dtype: str = "fp16"
    head_dim: int = 128  # rope only

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"vector op kind: expected one of {sorted(KINDS)}, "
                             f"got {self.kind!r}")
        if self.rows < 1 or self.width < 1:
            raise ValueError(f"vector op: rows and width must be >= 1, got {self}")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"vector op: dtype expected one of {list(DTYPE_BYTES)}")

    @property
    def reads(self) -> int:
        return KINDS[self.kind][0]

    @property
    def writes(self) -> int:
        return KINDS[self.kind][1]

    @property
    def is_norm(self) -> bool:
        return KINDS[self.kind][2]

    @property
    def ops_per_element(self) -> int:
        return KINDS[self.kind][3]

    @property
    def elements(self) -> int:
        return self.rows * self.width

    @property
    def side_bytes(self) -> float:
        """Bytes read once per call besides the rows: the norm weight, rope's cos/sin."""
        b = DTYPE_BYTES[self.dtype]
        if self.is_norm:
            return float(self.width * b)
        if self.kind == "rope":
            return float(2 * self.rows * self.head_dim * b)
        return 0.0

    @property
    def min_bytes(self) -> float:
        """Each row tensor moved once between GM and UB."""
        b = DTYPE_BYTES[self.dtype]
        return self.elements * b * (self.reads + self.writes) + self.side_bytes

    def roofline_s(self, profile: SocProfile) -> float:
        return self.min_bytes / profile.hbm_bandwidth()

    @property
    def label(self) -> str:
        return f"{self.kind} {self.rows}x{self.width}"


def step_vector_ops(arch: Architecture, phase: str, batch: int, seq_len: int, tp: int,
                    dtype: str) -> list[tuple[VectorOp, int]]:
    """The vector kernels of one forward step on one of ``tp`` cards, with their counts.

    Per layer: two RMSNorms, each after a residual add (the fused kernel's
    problem) except the first layer's input norm, one SwiGLU over the MLP's
    width on this card (a MoE layer's routed rows and its shared expert
    together), one rotary pass over Q and K (MLA rotates only its rope
    dimensions); and the final norm before lm_head. Gemma 2/3 add two plain
    RMSNorms per layer (of the attention and MLP outputs, before their residual
    adds); Qwen3 and Gemma 3 one RMSNorm over head_dim of every Q and K head.
    """
    tokens = batch if phase == "decode" else batch * seq_len
    h = arch.hidden
    if arch.mla is None:
        rope_width = (arch.q_heads + max(arch.kv_heads, tp)) * arch.head_dim // tp
        rope_dim = arch.head_dim
    else:
        rope_dim = arch.mla.qk_rope_head_dim
        rope_width = (arch.q_heads // tp + 1) * rope_dim
    out = [(VectorOp("add_rmsnorm", tokens, h, dtype), 2 * arch.layers - 1),
           (VectorOp("rmsnorm", tokens, h, dtype), 2),
           (VectorOp("rope", tokens, rope_width, dtype, rope_dim), arch.layers)]
    if arch.post_norms:
        out[1] = (out[1][0], 2 + 2 * arch.layers)
    if arch.qk_norm:  # each Q and K head's row of head_dim, as the rotary pass sees them
        out.append((VectorOp("rmsnorm", tokens * rope_width // arch.head_dim, arch.head_dim,
                             dtype), arch.layers))
    if arch.dense_layers:
        out.append((VectorOp("swiglu", tokens, arch.intermediate // tp, dtype),
                    arch.dense_layers))
    if arch.experts is not None:
        e = arch.experts
        width = (e.per_token * e.intermediate + e.shared_intermediate) // tp
        out.append((VectorOp("swiglu", tokens, width, dtype), arch.moe_layers))
    return out
