"""Which header trees the compile check uses: the checkouts ``ASCENDC_DEVKIT`` and
``ASCENDC_TOOLS`` name, or a one-line reason (the compile module's skip) naming both
variables and what is missing. Runs without the headers: the trees here hold only the
files the check looks for."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.backends.npu.ascendc_check import (
    DEVKIT_ENV,
    DEVKIT_NEEDS,
    TOOLS_ENV,
    TOOLS_NEEDS,
    HeadersUnavailable,
    source_trees,
)


def tree(root: Path, files: tuple[str, ...]) -> Path:
    for name in files:
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("")
    return root


def reason(environ: dict[str, str]) -> str:
    with pytest.raises(HeadersUnavailable) as raised:
        source_trees(environ)
    message = str(raised.value)
    assert "\n" not in message and DEVKIT_ENV in message and TOOLS_ENV in message
    return message


def test_unset_variables_are_named():
    assert f"{DEVKIT_ENV} and {TOOLS_ENV} unset" in reason({})
    assert f"{DEVKIT_ENV} and {TOOLS_ENV} unset" in reason({DEVKIT_ENV: "", TOOLS_ENV: ""})
    assert reason({DEVKIT_ENV: "/x"}).startswith(f"Ascend C headers: {TOOLS_ENV} unset; set ")


def test_a_tree_without_a_needed_file_is_named_with_the_file(tmp_path):
    devkit = tree(tmp_path / "devkit", DEVKIT_NEEDS[:1])  # no tiling generator
    tools = tree(tmp_path / "tools", TOOLS_NEEDS)
    message = reason({DEVKIT_ENV: str(devkit), TOOLS_ENV: str(tools)})
    assert f"{DEVKIT_ENV}={devkit} has no {DEVKIT_NEEDS[1]}" in message
    devkit = tree(devkit, DEVKIT_NEEDS)
    message = reason({DEVKIT_ENV: str(devkit), TOOLS_ENV: str(tmp_path / "absent")})
    assert f"{TOOLS_ENV}={tmp_path / 'absent'} has no {TOOLS_NEEDS[0]}" in message


def test_complete_trees_are_returned_resolved(tmp_path, monkeypatch):
    tree(tmp_path / "devkit", DEVKIT_NEEDS)
    tree(tmp_path / "tools", TOOLS_NEEDS)
    monkeypatch.chdir(tmp_path)
    assert source_trees({DEVKIT_ENV: "devkit", TOOLS_ENV: "tools"}) == (
        tmp_path.resolve() / "devkit", tmp_path.resolve() / "tools")
