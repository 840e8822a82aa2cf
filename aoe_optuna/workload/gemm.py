"""One GEMM problem, and a workload: the GEMMs of one forward step and how their
latencies become tokens/s.

A workload is the list of GEMMs of one forward step (each with how many times
it runs per step and a name unique in the workload), the time of the parts the
tiling does not change (attention, norms, activations, all-reduces), and how
many tokens one step yields.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.workload.step_operators import LayerOpCall

MAX_DIM = 1 << 24  # a GEMM dimension past this is a typo, not a workload
# (M, K, N, dtype), and the batch after them when there is more than one matrix: a
# single GEMM keeps the key it always had (stored studies, noise draws, KB entries).
GemmKey = tuple[int | str, ...]


@dataclass(frozen=True)
class Gemm:
    """C[M, N] = A[M, K] @ B[K, N] in ``dtype`` (C written in the same dtype).

    ``batch`` > 1 is one batched matmul launch over that many independent
    matrices of this shape (each its own A, B and C; catlass's
    ``Gemm::Kernel::BatchedMatmul``): MLA's absorbed per-head projections. Its
    flops, bytes and roofline count every matrix; ``count`` is still the times
    the launch runs per step.
    """

    M: int
    K: int
    N: int
    dtype: str = "fp16"
    name: str = "gemm"
    count: int = 1  # times it runs per forward step
    batch: int = 1  # matrices of one batched launch

    def __post_init__(self) -> None:
        for dim in ("M", "K", "N", "batch"):
            v = getattr(self, dim)
            if isinstance(v, bool) or not isinstance(v, int) or not 1 <= v <= MAX_DIM:
                raise ValueError(f"{dim}: expected an integer from 1 to {MAX_DIM}, got {v!r}")
        c = self.count
        if isinstance(c, bool) or not isinstance(c, int) or c < 1:
            raise ValueError(f"count: expected an integer of at least 1, got {c!r}")
        if self.dtype not in DTYPE_BYTES:
            raise ValueError(f"dtype: expected one of {list(DTYPE_BYTES)}, got {self.dtype!r}")

    @property
    def flops(self) -> float:
        return 2.0 * self.M * self.K * self.N * self.batch

    @property
    def min_bytes(self) -> float:
        """Bytes that must cross HBM at least once: A, B read and C written (every matrix)."""
        b = DTYPE_BYTES[self.dtype]
        return float((self.M * self.K + self.K * self.N + self.M * self.N) * b * self.batch)

    @property
    def key(self) -> GemmKey:
        """(M, K, N, dtype), plus the batch when the launch has more than one matrix."""
        return (self.M, self.K, self.N, self.dtype) + ((self.batch,) if self.batch > 1 else ())

    def roofline_s(self, profile: SocProfile) -> float:
        """The latency no tiling can beat: compute or HBM traffic, whichever is longer."""
        compute = self.flops / profile.peak_flops(self.dtype)
        return max(compute, self.min_bytes / profile.hbm_bandwidth())


@dataclass(frozen=True)
class Workload:
    """GEMMs of one step, the tiling-independent time, and tokens per step."""

    name: str
    gemms: tuple[Gemm, ...]
    tokens_per_step: int
    fixed_s: float = 0.0  # attention, norms, activations, communication
    details: Mapping[str, float] = field(default_factory=dict)
    # the non-GEMM calls an operator run tunes; each one's charge is part of fixed_s
    layer_ops: tuple[LayerOpCall, ...] = ()

    def __post_init__(self) -> None:
        if not self.gemms:
            raise ValueError("gemms: expected at least one GEMM, got none")
        # linear: a profile may hold 10^5 shapes
        names = Counter([g.name for g in self.gemms] + [op.name for op in self.layer_ops])
        twice = sorted(n for n, times in names.items() if times > 1)
        if twice:
            raise ValueError(f"gemms: expected unique operator names, got {twice[0]!r} twice")
        if isinstance(self.tokens_per_step, bool) or not isinstance(self.tokens_per_step, int) \
                or self.tokens_per_step < 1:
            raise ValueError(f"tokens_per_step: expected an integer of at least 1, got "
                             f"{self.tokens_per_step!r}")
        if not 0.0 <= self.fixed_s < float("inf"):
            raise ValueError(f"fixed_s: expected a finite time of at least 0, got {self.fixed_s!r}")

    @property
    def dtype(self) -> str:
        return self.gemms[0].dtype

    def step_time(self, latencies: Mapping[str, float]) -> float:
        """Step time from one latency per GEMM name; a layer operator's latency, where
        given, replaces what ``fixed_s`` charges for it."""
        tuned = sum(op.count * (latencies[op.name] - op.charged_s)
                    for op in self.layer_ops if op.name in latencies)
        return self.fixed_s + tuned + sum(g.count * latencies[g.name] for g in self.gemms)

    def tokens_per_s(self, latencies: Mapping[str, float]) -> float:
        return self.tokens_per_step / self.step_time(latencies)

    def roofline_step_s(self, profile: SocProfile) -> float:
        return self.fixed_s + sum(g.count * g.roofline_s(profile) for g in self.gemms)

    def roofline_tokens_per_s(self, profile: SocProfile) -> float:
        """The best tokens/s any tiling could reach on ``profile``."""
        return self.tokens_per_step / self.roofline_step_s(profile)


def single_gemm(gemm: Gemm) -> Workload:
    """One GEMM as a workload: tokens/s = M / latency (each row of A is a token)."""
    batch = f" batch={gemm.batch}" if gemm.batch > 1 else ""
    return Workload(name=f"gemm {gemm.M}x{gemm.K}x{gemm.N}{batch} {gemm.dtype}",
                    gemms=(gemm,), tokens_per_step=gemm.M)
