"""What the cpu backend's kernel model needs of the host: its vector ISA.

Read from ``/proc/cpuinfo``'s flags; a host that hides them gets baseline
x86-64 (SSE2, 16 vector registers), which only blunts the model's
preferences. Cache sizes do not enter the model (``kernel_model.py`` says why).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.backends.kernel_build.toolchain import cpuinfo_field

CPUINFO = Path("/proc/cpuinfo")


@dataclass(frozen=True)
class HostCpu:
    """The host figures that set the cpu kernel's speed, as ``-march=native`` sees them."""

    avx: bool = False  # 256-bit fp32 vectors for -march=native
    fma: bool = False  # fused multiply-add for -march=native
    avx512vl: bool = False  # 32 vector registers at 128/256 bits under -march=native
    sse41: bool = False  # pmulld: a packed 32-bit multiply for the int8 kernel

    @property
    def native_lanes(self) -> int:
        """fp32 lanes of a vector gcc builds for -march=native (gcc keeps 256 bits on
        AVX-512 hosts unless told otherwise)."""
        return 8 if self.avx else 4

    @property
    def native_registers(self) -> int:
        return 32 if self.avx512vl else 16

    def describe(self) -> str:
        isa = "AVX" if self.avx else "SSE"
        isa += "+FMA" if self.fma else ""
        return f"{isa}, {self.native_registers} vector registers"

    @classmethod
    def this_host(cls) -> HostCpu:
        flags = _cpu_flags()
        return cls(avx="avx" in flags, fma="fma" in flags, avx512vl="avx512vl" in flags,
                   sse41="sse4_1" in flags)


def _cpu_flags() -> set[str]:
    return set((cpuinfo_field("flags", CPUINFO) or "").split())
