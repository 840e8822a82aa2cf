"""The shipped specs as test params: a spec needing what this machine lacks skips,
saying how to get it.

A replay spec needs its recorded space. Tests never download (:mod:`tests.conftest`
points the download at a closed port): a fresh clone with nothing beside it passes
offline, skipping what needs the files. An npu spec needs the CANN toolkit and a card.
"""

from __future__ import annotations

from pathlib import Path

import json5
import pytest

from aoe_optuna import load_spec
from aoe_optuna.backends.npu.cann import find_cann
from aoe_optuna.backends.replay.hub import PREFIX, spaces_dir


def hub_name(spec: Path) -> str | None:
    """The ``benchmark_hub:NAME`` a replay spec reads, or None."""
    if spec.suffix != ".json":
        return None
    path = json5.loads(spec.read_text()).get("backend", {}).get("path", "")
    return path.removeprefix(PREFIX).removesuffix(".json.gz") if path.startswith(PREFIX) \
        else None


def missing_reason(name: str) -> str | None:
    """Why a test of the recorded space ``name`` cannot run here, or None when it can."""
    if (spaces_dir() / f"{name}.json.gz").is_file():
        return None
    return (f"needs the recorded space {name}.json.gz in {spaces_dir()}: a checkout with "
            "the project's shared/spaces folder beside it finds it there; else put the "
            "benchmark_hub files in $AOE_SPACES_DIR, or run `aoe-tune bench --space "
            f"benchmark_hub:{name}` once online")


def backend_name(spec: Path) -> str:
    return load_spec(spec).backend["name"]


def npu_reason() -> str | None:
    """Why an npu spec cannot run here (no toolkit), or None."""
    try:
        find_cann()
    except ValueError as exc:
        return f"the npu backend needs the CANN toolkit and an NPU: {exc}"
    return None


def spec_param(spec: Path) -> object:
    """``spec`` as a pytest param that skips, with the reason, when this machine lacks
    its recorded space or its toolkit."""
    name = hub_name(spec)
    reason = None if name is None else missing_reason(name)
    if reason is None and backend_name(spec) == "npu":
        reason = npu_reason()
    marks = [pytest.mark.skip(reason=reason)] if reason else []
    return pytest.param(spec, marks=marks, id=spec.name)
