"""Identify a toolchain for the build cache: a new compiler must never reuse old builds."""

from __future__ import annotations

import platform
import shutil
import subprocess
from functools import lru_cache


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


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"
