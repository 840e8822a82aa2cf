"""Find the CANN toolkit (Huawei's Ascend compiler, runtime and tools) and say what it is.

The toolkit's own ``set_env.sh`` exports ``ASCEND_HOME_PATH`` and
``ASCEND_TOOLKIT_HOME`` (both point at ``.../ascend-toolkit/latest``); a user
may also name the directory explicitly (``backend.cann`` in a spec). A
directory counts as a toolkit when it holds the Ascend C kernel CMake support
that the npu backend's projects include: ``compiler/tikcpp/ascendc_kernel_cmake``
(CANN 8) or ``tools/tikcpp/ascendc_kernel_cmake`` (CANN 7).
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
ASCENDC_CMAKE_DIRS = ("compiler/tikcpp/ascendc_kernel_cmake", "tools/tikcpp/ascendc_kernel_cmake")
# Files that state the toolkit's version, first match wins (layouts differ across releases).
VERSION_FILES = (
    "compiler/version.info",
    "version.cfg",
    "runtime/version.info",
    "aarch64-linux/ascend_toolkit_install.info",
    "x86_64-linux/ascend_toolkit_install.info",
)
_VERSION_LINE = re.compile(r"^\s*(?:version|Version|runtime_running_version)\s*=\s*\[?([\w.\-]+)")

NOT_FOUND = (
    "CANN toolkit not found: install the CANN toolkit (Ascend-cann-toolkit, 7.0 or newer) and "
    "set ASCEND_HOME_PATH (source <install>/ascend-toolkit/set_env.sh) or pass backend.cann"
)


class CannNotFound(ValueError):
    """No usable toolkit; the message is one line saying what to install or set.

    A ValueError so that a spec naming the npu backend fails like any bad option:
    one line, before a study starts.
    """


@dataclass(frozen=True)
class CannToolkit:
    """One installed toolkit: its root (``.../ascend-toolkit/latest``) and version."""

    home: Path
    version: str

    @property
    def ascendc_cmake_dir(self) -> Path:
        for rel in ASCENDC_CMAKE_DIRS:
            if (self.home / rel).is_dir():
                return self.home / rel
        raise CannNotFound(f"{self.home}: no {' or '.join(ASCENDC_CMAKE_DIRS)}")

    @property
    def include_dir(self) -> Path:
        """Where ``acl/acl.h`` lives."""
        return self.home / "include"

    @property
    def lib_dir(self) -> Path:
        return self.home / "lib64"

    def simulator_lib_dir(self, soc: str) -> Path:
        """The cycle model's runtime libraries for ``soc`` (RUN_MODE=sim links them)."""
        return self.home / "tools" / "simulator" / soc / "lib"

    def msprof(self) -> Path | None:
        """The ``msprof`` profiler, if installed with the toolkit or on PATH."""
        bundled = self.home / "tools" / "profiler" / "bin" / "msprof"
        if bundled.is_file():
            return bundled
        found = shutil.which("msprof")
        return Path(found) if found else None

    @property
    def toolchain_id(self) -> str:
        """What the build cache keys on: a new toolkit never reuses old builds."""
        return f"cann|{self.home.resolve()}|{self.version}"


def find_cann(explicit: str | os.PathLike[str] | None = None,
              env: Mapping[str, str] | None = None) -> CannToolkit:
    """The toolkit at ``explicit``, else at ``$ASCEND_HOME_PATH`` / ``$ASCEND_TOOLKIT_HOME``.

    Raises :class:`CannNotFound` with a one-line message naming what was tried.
    """
    env = os.environ if env is None else env
    if explicit is not None:
        return _toolkit_at(Path(explicit), "backend.cann")
    for var in ENV_VARS:
        value = env.get(var)
        if value:
            return _toolkit_at(Path(value), f"${var}")
    raise CannNotFound(NOT_FOUND)


def _toolkit_at(home: Path, named_by: str) -> CannToolkit:
    if not home.is_dir():
        raise CannNotFound(f"CANN toolkit not found: {named_by}={home} is not a directory; "
                           "point it at <install>/ascend-toolkit/latest")
    if not any((home / rel).is_dir() for rel in ASCENDC_CMAKE_DIRS):
        raise CannNotFound(
            f"CANN toolkit not found: {named_by}={home} has no {ASCENDC_CMAKE_DIRS[0]} "
            "(the Ascend C kernel CMake support); point it at <install>/ascend-toolkit/latest"
        )
    return CannToolkit(home=home, version=read_version(home))


def read_version(home: Path) -> str:
    """The toolkit's version string (``8.0.RC3``), or ``"unknown"`` when no file states it."""
    for rel in VERSION_FILES:
        path = home / rel
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if m := _VERSION_LINE.match(line):
                return m.group(1)
    return "unknown"
