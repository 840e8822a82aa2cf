"""Every module path the docs and the README name exists, so their map cannot go stale.

A path is read where the text names a ``.py`` file under ``aoe_optuna/``, ``tests/`` or
``scripts/``, or under one of the package's own folders as the docs shorten it
(``study/run/loop.py`` is ``aoe_optuna/study/run/loop.py``). Patterns (``*``, ``<name>``)
are not paths.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "aoe_optuna"
DOCS = [*sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "docs" / "benchmarks").glob("*.md")),
        ROOT / "README.md"]
SUBPACKAGES = sorted(p.name for p in PACKAGE.iterdir() if (p / "__init__.py").exists())
_PATH = re.compile(r"(?<![\w./<*-])((?:[\w-]+/)+[\w-]+\.py)\b")


def documented_paths(text: str) -> set[str]:
    """The repository paths of the .py files ``text`` names (short forms resolved)."""
    out = set()
    for match in _PATH.finditer(text.replace("../", " ")):  # links relative to docs/
        path = match.group(1)
        top = path.split("/", 1)[0]
        if top in ("aoe_optuna", "tests", "scripts"):
            out.add(path)
        elif top in SUBPACKAGES:
            out.add(f"aoe_optuna/{path}")
    return out


def test_short_forms_resolve_and_patterns_are_skipped() -> None:
    text = ("`study/run/loop.py:run_study`, aoe_optuna/export/kb.py, tests/conftest.py, "
            "`backends/<name>/backend.py`, `space/*_attention_space.py`, (../scripts/chaos.py)")
    assert documented_paths(text) == {"aoe_optuna/study/run/loop.py", "aoe_optuna/export/kb.py",
                                      "tests/conftest.py", "scripts/chaos.py"}


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_every_named_module_exists(doc: Path) -> None:
    missing = sorted(p for p in documented_paths(doc.read_text(encoding="utf-8"))
                     if not (ROOT / p).is_file())
    assert not missing, f"{doc.name} names files that do not exist: {missing}"
