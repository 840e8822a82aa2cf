"""What the cpu backend's kernel model needs of the host: its vector ISA and its caches.

Read from ``/proc/cpuinfo``'s flags and ``/sys/devices/system/cpu/cpu0/cache``;
a host that hides them gets the baseline x86-64 figures (SSE2, 16 registers,
32 KiB L1d, 1 MiB L2), which only blunt the model's preferences.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")
CACHE_DIR = Path("/sys/devices/system/cpu/cpu0/cache")


@dataclass(frozen=True)
class HostCpu:
    """The host figures that set the cpu kernel's speed, as ``-march=native`` sees them."""

    avx2: bool = False  # 256-bit vectors for -march=native (gcc keeps 256 on AVX-512 hosts)
    fma: bool = False  # fused multiply-add for -march=native
    avx512vl: bool = False  # 32 vector registers at 128/256 bits under -march=native
    sse41: bool = False  # pmulld: a packed 32-bit multiply for the int8 kernel
    l1d_bytes: int = 32 * 1024
    l2_bytes: int = 1024 * 1024

    @property
    def native_lanes(self) -> int:
        """fp32 lanes of a vector gcc builds for -march=native (its default preference)."""
        return 8 if self.avx2 else 4

    @property
    def native_registers(self) -> int:
        return 32 if self.avx512vl else 16

    def describe(self) -> str:
        isa = "AVX2" if self.avx2 else "SSE"
        isa += "+FMA" if self.fma else ""
        isa += ", 32 vector registers" if self.avx512vl else ""
        return f"{isa}, L1d {self.l1d_bytes // 1024} KiB, L2 {self.l2_bytes // 1024} KiB"

    @classmethod
    def this_host(cls) -> HostCpu:
        flags = _cpu_flags()
        caches = _cache_sizes()
        base = cls()
        return cls(avx2="avx2" in flags, fma="fma" in flags, avx512vl="avx512vl" in flags,
                   sse41="sse4_1" in flags,
                   l1d_bytes=caches.get((1, "Data"), base.l1d_bytes),
                   l2_bytes=caches.get((2, "Unified"), base.l2_bytes))


def _cpu_flags() -> set[str]:
    try:
        text = CPUINFO.read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def parse_size(text: str) -> int | None:
    """sysfs's cache size ("48K", "1280K", "48M") in bytes."""
    match = re.fullmatch(r"\s*(\d+)\s*([KMG]?)\s*", text)
    if not match:
        return None
    return int(match.group(1)) * {"": 1, "K": 1024, "M": 1024**2, "G": 1024**3}[match.group(2)]


def _cache_sizes() -> dict[tuple[int, str], int]:
    """(level, type) -> bytes of cpu0's caches."""
    out: dict[tuple[int, str], int] = {}
    for index in sorted(CACHE_DIR.glob("index*")):
        try:
            level = int((index / "level").read_text())
            kind = (index / "type").read_text().strip()
            size = parse_size((index / "size").read_text())
        except (OSError, ValueError):
            continue
        if size:
            out[(level, kind)] = size
    return out
