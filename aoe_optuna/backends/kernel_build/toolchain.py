"""Identify a toolchain for the build cache: a new compiler must never reuse old builds."""

from __future__ import annotations

import platform
import shutil
import subprocess
from functools import lru_cache
from pathlib import Path

CPUINFO = Path("/proc/cpuinfo")


class ToolchainError(RuntimeError):
    """The compiler cannot be found or does not answer ``--version``."""


@lru_cache(maxsize=16)
def toolchain_id(compiler: str) -> str:
    """``<resolved path>|<first line of --version>|<machine>|<cpu model>``.

    The machine and CPU model are part of the id because flags such as
    ``-march=native`` make the same compiler emit different code on another host.
    """
    path = shutil.which(compiler)
    if path is None:
        raise ToolchainError(f"compiler {compiler!r} not found on PATH; install gcc or set CC")
    try:
        out = subprocess.run(
            [path, "--version"], capture_output=True, text=True, timeout=30, check=True
        ).stdout
    except (subprocess.SubprocessError, OSError) as exc:
        raise ToolchainError(f"{path} --version failed: {exc}") from None
    version = out.splitlines()[0].strip() if out.strip() else "unknown"
    return f"{path}|{version}|{platform.machine()}|{_cpu_model()}"


def cpuinfo_field(key: str, path: Path = CPUINFO) -> str | None:
    """The value of the first ``key : value`` line of ``/proc/cpuinfo`` (None: no such
    line, or no such file)."""
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                name, sep, value = line.partition(":")
                if sep and name.strip() == key:
                    return value.strip()
    except OSError:
        pass
    return None


def _cpu_model() -> str:
    return cpuinfo_field("model name") or platform.processor() or "unknown"
