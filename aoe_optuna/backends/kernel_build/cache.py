"""A content-addressed build cache: one key per (sources, build commands, toolchain).

A build runs in a fresh work directory of its own (so parallel workers never
share one), and only its artifact is published into ``<root>/<key>/``, by an
atomic directory rename: a reader sees a complete artifact or none, and when
two workers build the same key the second one's copy is simply dropped.
The work directory is removed afterwards, whether the build succeeded or not.

A failed build is remembered in memory (per cache object) so a config that
does not compile is not recompiled when a sampler proposes it again.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import os
import shutil
import tempfile
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from aoe_optuna.backends.kernel_build.process import RunResult, run_limited

KEY_CHARS = 24  # hex digits of sha256 kept in directory names


class BuildError(RuntimeError):
    """The build machinery itself failed (not the candidate): a full disk, no compiler."""


def build_key(
    sources: Mapping[str, str | bytes], commands: Sequence[Sequence[str]], toolchain: str
) -> str:
    """Hash of every source file (name and bytes), every command line and the toolchain id."""
    h = hashlib.sha256()

    def feed(part: str | bytes) -> None:
        data = part.encode() if isinstance(part, str) else part
        h.update(len(data).to_bytes(8, "little"))
        h.update(data)

    feed(toolchain)
    for name in sorted(sources):
        feed(name)
        feed(sources[name])
    for argv in commands:
        feed("\0".join(argv))
    return h.hexdigest()[:KEY_CHARS]


@dataclass(frozen=True)
class BuildResult:
    """An artifact (on success) or the failing step's run (on failure)."""

    key: str
    artifact: Path | None
    cached: bool
    seconds: float
    failed_run: RunResult | None = None

    @property
    def ok(self) -> bool:
        return self.artifact is not None


@dataclass
class BuildCache:
    """Artifacts under ``root/<key>/``; builds in ``root/work/`` (removed after each)."""

    root: Path
    builds: int = 0
    hits: int = 0
    _failures: dict[str, BuildResult] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        self.root = Path(self.root)
        try:
            (self.root / "work").mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise BuildError(f"cannot create the build cache at {self.root}: {exc}") from None

    def artifact_path(self, key: str, artifact: str) -> Path:
        return self.root / key / artifact

    def get_or_build(
        self,
        sources: Mapping[str, str | bytes],
        commands: Sequence[Sequence[str]],
        artifact: str,
        toolchain: str,
        timeout_s: float,
        env: Mapping[str, str] | None = None,
    ) -> BuildResult:
        """The artifact for these sources and commands, built on a miss.

        ``commands`` run in order in the work directory (where ``sources`` are
        written, by relative name) and must leave ``artifact`` there. The
        whole build shares ``timeout_s``.
        """
        key = build_key(sources, commands, toolchain)
        path = self.artifact_path(key, artifact)
        if path.exists():
            self.hits += 1
            return BuildResult(key, path, cached=True, seconds=0.0)
        if key in self._failures:
            self.hits += 1  # remembered: nothing is built, no time is spent this time
            return dataclasses.replace(self._failures[key], cached=True, seconds=0.0)
        self.builds += 1
        work = Path(tempfile.mkdtemp(prefix=f"{key}-", dir=self.root / "work"))
        try:
            result = self._build_in(work, key, sources, commands, artifact, timeout_s, env)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        if not result.ok:
            self._failures[key] = result
        return result

    def _build_in(
        self,
        work: Path,
        key: str,
        sources: Mapping[str, str | bytes],
        commands: Sequence[Sequence[str]],
        artifact: str,
        timeout_s: float,
        env: Mapping[str, str] | None,
    ) -> BuildResult:
        src = work / "src"
        for name, content in sources.items():
            target = src / name
            if not target.resolve().is_relative_to(src.resolve()):
                raise BuildError(f"source name {name!r} escapes the work directory")
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content)
        spent = 0.0
        for argv in commands:
            run = run_limited(argv, max(timeout_s - spent, 0.1), cwd=src, env=env)
            spent += run.elapsed_s
            if not run.ok:
                return BuildResult(key, None, cached=False, seconds=spent, failed_run=run)
        built = src / artifact
        if not built.exists():
            raise BuildError(f"the build commands succeeded but left no {artifact!r}")
        staging = work / "publish"
        (staging / Path(artifact).parent).mkdir(parents=True, exist_ok=True)
        os.replace(built, staging / artifact)
        # When another worker published the same key first, its copy is identical.
        with contextlib.suppress(OSError):
            os.rename(staging, self.root / key)
        return BuildResult(key, self.artifact_path(key, artifact), cached=False, seconds=spent)

    def clear(self) -> None:
        """Remove every cached artifact and work directory."""
        shutil.rmtree(self.root, ignore_errors=True)
        self._failures.clear()
