"""Which C compiler the cpu backend builds with, checked before the first build.

The spec's ``backend.compiler`` if it names one, else ``$CC``, else ``cc``: what
the study asks for comes first (it is stored with the study, so a resume builds
with the same compiler), then the environment's usual say, as make's. Either may
hold a wrapper and its words (``ccache gcc``). A compiler that is not there, or
does not answer ``--version`` (its id keys the build cache), is refused as the
option ``compiler`` before anything is measured: without it every trial would
fail the same way.
"""

from __future__ import annotations

import os
import shlex
import shutil
from collections.abc import Mapping
from dataclasses import dataclass

from aoe_optuna.backends.kernel_build.toolchain import ToolchainError, toolchain_id

DEFAULT = "cc"
ENV = "CC"


@dataclass(frozen=True)
class Compiler:
    """The compiler's command words and its toolchain id (the build cache's key)."""

    words: tuple[str, ...]
    toolchain: str


def find_compiler(given: str | None, env: Mapping[str, str] | None = None) -> Compiler:
    """The compiler ``given`` (the spec's), else ``$CC``, else ``cc``; ValueError
    ``compiler: expected ...`` naming where the name came from when it cannot build."""
    env = os.environ if env is None else env
    if given:
        text, origin = given, "backend.compiler"
    elif env.get(ENV, "").strip():
        text, origin = env[ENV], f"from {ENV}; backend.compiler is not set"
    else:
        text, origin = DEFAULT, f"the default: neither backend.compiler nor {ENV} is set"
    try:
        words = tuple(shlex.split(text))
    except ValueError as exc:
        raise ValueError(f"compiler: expected a command, got {text!r} ({origin}: {exc})") from None
    if not words:
        raise ValueError(f"compiler: expected a command, got {text!r} ({origin})")
    if shutil.which(words[0]) is None:
        raise ValueError(f"compiler: expected a C compiler on PATH, got {text!r} ({origin}), "
                         f"not found: install gcc, or name a compiler in {ENV} or "
                         "backend.compiler")
    try:
        toolchain = toolchain_id(words[0])
    except ToolchainError as exc:
        raise ValueError(f"compiler: expected a C compiler that answers --version, got "
                         f"{text!r} ({origin}): {exc}") from None
    return Compiler(words, toolchain)
