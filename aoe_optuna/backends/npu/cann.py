"""Find the CANN toolkit (Huawei's Ascend compiler, runtime and tools) and say what it is.

The toolkit's ``set_env.sh`` exports ``ASCEND_HOME_PATH`` and
``ASCEND_TOOLKIT_HOME``; a user may also name the directory explicitly
(``backend.cann`` in a spec). When nothing names it, the default install
places of CANN 8.0 to 8.5 are tried (:data:`.toolkit_layout.DEFAULT_HOMES`).
A directory counts as a toolkit when it holds the Ascend C kernel CMake
support (``ascendc.cmake``) in one of the places releases have put it.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from aoe_optuna.backends.npu import toolkit_layout as layout

ENV_VARS = ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME")
_VERSION_LINE = re.compile(r"^\s*(?:version|Version|runtime_running_version)\s*=\s*\[?([\w.\-]+)")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.(RC\d+|\d+))?(?:\.?(alpha|beta)(\d+))?", re.IGNORECASE)

NOT_FOUND = (
    "CANN toolkit not found: install the CANN toolkit (Ascend-cann-toolkit, 8.0 or newer) and "
    "source its set_env.sh (it sets ASCEND_HOME_PATH), or pass backend.cann; "
    "`aoe-tune doctor` says what is missing"
)


class CannNotFound(ValueError):
    """No usable toolkit; the message is one line saying what to install or set.

    A ValueError so that a spec naming the npu backend fails like any bad option:
    one line, before a study starts.
    """


def version_key(version: str) -> tuple[int, int, int, int] | None:
    """A sortable key of a CANN version: ``8.2.RC1`` < ``8.2.0`` < ``8.5.0``; None if unreadable.

    Release candidates come before the final release of the same minor
    version; ``alpha``/``beta`` builds before their release candidate.
    """
    m = _VERSION.match(version.strip())
    if not m:
        return None
    major, minor, patch, pre, pre_n = m.groups()
    if patch is None:
        third = 0
    elif patch.upper().startswith("RC"):
        third = -100 + int(patch[2:])  # RC1 < RC2 < the .0 release
    else:
        third = int(patch)
    pre_rank = -1000 + int(pre_n or 0) if pre else 0
    return (int(major), int(minor), third, pre_rank)


def at_least(version: str, minimum: str) -> bool:
    """Whether ``version`` is ``minimum`` or newer (an unreadable version is not)."""
    have, need = version_key(version), version_key(minimum)
    return have is not None and need is not None and have >= need


@dataclass(frozen=True)
class CannToolkit:
    """One installed toolkit: its root (``ascend-toolkit/latest`` or ``cann``) and version."""

    home: Path
    version: str
    found_by: str = "backend.cann"

    @property
    def ascendc_cmake_dir(self) -> Path:
        found = layout.ASCENDC_CMAKE.find(self.home)
        if found is None:
            raise CannNotFound(f"{self.home}: no {' or '.join(layout.ASCENDC_CMAKE.places)}")
        return found.parent

    @property
    def include_dir(self) -> Path:
        """Where ``acl/acl.h`` lives."""
        found = layout.ACL_HEADER.find(self.home)
        return found.parent.parent if found else self.home / "include"

    @property
    def lib_dir(self) -> Path:
        return self.home / "lib64"

    def simulator_lib_dir(self, soc: str) -> Path:
        """The cycle model's runtime libraries for ``soc`` (RUN_MODE=sim runs on them)."""
        return self.home / "tools" / "simulator" / soc / "lib"

    def cpu_twin_lib_dirs(self, soc: str) -> list[Path]:
        """The CPU twin's libraries (RUN_MODE=cpu), as the kernel-launch samples' run.sh sets."""
        base = self.home / "tools" / "tikicpulib" / "lib"
        return [base, base / soc, self.simulator_lib_dir(soc)]

    def msprof(self) -> Path | None:
        """The ``msprof`` profiler, if installed with the toolkit or on PATH."""
        bundled = layout.MSPROF.find(self.home)
        if bundled is not None:
            return bundled
        found = shutil.which("msprof")
        return Path(found) if found else None

    def at_least(self, minimum: str) -> bool:
        return at_least(self.version, minimum)

    @property
    def toolchain_id(self) -> str:
        """What the build cache keys on: a new toolkit never reuses old builds."""
        return f"cann|{self.home.resolve()}|{self.version}"


def find_cann(explicit: str | os.PathLike[str] | None = None,
              env: Mapping[str, str] | None = None,
              defaults: Sequence[str] = layout.DEFAULT_HOMES) -> CannToolkit:
    """The toolkit at ``explicit``, else ``$ASCEND_HOME_PATH`` / ``$ASCEND_TOOLKIT_HOME``, else
    the first default install place that holds one.

    Raises :class:`CannNotFound` with a one-line message naming what was tried.
    """
    env = os.environ if env is None else env
    if explicit is not None:
        return _toolkit_at(Path(explicit), "backend.cann")
    for var in ENV_VARS:
        value = env.get(var)
        if value:
            return _toolkit_at(Path(value), f"${var}")
    for place in defaults:
        home = Path(os.path.expanduser(place))
        if home.is_dir() and layout.ASCENDC_CMAKE.find(home) is not None:
            return CannToolkit(home=home, version=read_version(home),
                               found_by=f"default place {place}")
    raise CannNotFound(NOT_FOUND)


def _toolkit_at(home: Path, named_by: str) -> CannToolkit:
    if not home.is_dir():
        raise CannNotFound(f"CANN toolkit not found: {named_by}={home} is not a directory; "
                           "point it at <install>/ascend-toolkit/latest or <install>/cann")
    if layout.ASCENDC_CMAKE.find(home) is None:
        raise CannNotFound(
            f"CANN toolkit not found: {named_by}={home} has no "
            f"{layout.ASCENDC_CMAKE.places[0]} (the Ascend C kernel CMake support); point it "
            "at <install>/ascend-toolkit/latest or <install>/cann"
        )
    return CannToolkit(home=home, version=read_version(home), found_by=named_by)


def read_version(home: Path, arch: str | None = None) -> str:
    """The toolkit's version string (``8.1.RC1``), or ``"unknown"`` when no file states it."""
    arch = arch or layout.host_arch()
    for rel in layout.VERSION_FILES:
        path = home / rel.format(arch=arch)
        try:
            text = path.read_text(errors="replace")
        except OSError:
            continue
        for line in text.splitlines():
            if m := _VERSION_LINE.match(line):
                return m.group(1)
    return "unknown"
