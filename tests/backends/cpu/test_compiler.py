"""Which compiler the cpu backend builds with (spec, then CC, then cc), refused before
anything is built when it is not there: real compilers and wrapper scripts, no mocks."""

from __future__ import annotations

import tempfile
from pathlib import Path

import pytest

from aoe_optuna.backends.cpu.backend import TEMP_PREFIX, CpuBackend
from aoe_optuna.backends.cpu.compiler import find_compiler
from aoe_optuna.space.params import default_config
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.format import SpecError
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.workload.gemm import Gemm

SMALL = Gemm(M=16, K=16, N=16, dtype="fp32")
FAST = {"min_repeats": 2, "max_repeats": 3, "max_seconds": 0.05}


def wrapper(folder: Path, name: str, version: str = "exec cc --version") -> Path:
    """A compiler named ``name`` that hands over to cc; ``version`` answers --version."""
    path = folder / name
    path.write_text(f'#!/bin/sh\nif [ "$1" = "--version" ]; then {version}; fi\n'
                    'exec cc "$@"\n')
    path.chmod(0o755)
    return path


def config() -> dict:
    return {**default_config(), "tile_m": 16, "tile_n": 16, "tile_k": 16}


def test_the_spec_comes_first_then_cc_then_the_default(tmp_path: Path) -> None:
    spec_cc, env_cc = wrapper(tmp_path, "spec-cc"), wrapper(tmp_path, "env-cc")
    assert find_compiler(str(spec_cc), {"CC": str(env_cc)}).words == (str(spec_cc),)
    assert find_compiler(None, {"CC": str(env_cc)}).words == (str(env_cc),)
    assert find_compiler(None, {}).words == ("cc",)
    assert find_compiler(None, {"CC": "  "}).words == ("cc",)  # set but empty: unset


def test_cc_may_be_a_command_with_words_and_builds_with_them(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """As make's CC: a wrapper and its flags (``ccache gcc``, ``gcc -m64``)."""
    marks = tmp_path / "marks"
    cc = wrapper(tmp_path, "marking-cc")
    cc.write_text(cc.read_text().replace('exec cc "$@"', f'echo "$1" >> {marks}\nexec cc "$@"'))
    monkeypatch.setenv("CC", f"{cc} -DAOE_FROM_CC=1")
    backend = CpuBackend(work_dir=tmp_path / "w", **FAST)
    assert backend.compiler.words == (str(cc), "-DAOE_FROM_CC=1")
    assert backend.measure(config(), SMALL).ok
    assert marks.read_text().split() == ["-DAOE_FROM_CC=1"]  # built once, with the word


@pytest.mark.parametrize("given, cc, where", [
    ("no-such-cc-aoe", "", "(backend.compiler)"),
    (None, "no-such-cc-aoe", "(from CC; backend.compiler is not set)"),
    (None, "", "(the default: neither backend.compiler nor CC is set)"),
])
def test_a_missing_compiler_says_where_its_name_came_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, given: str | None, cc: str,
        where: str) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))  # no cc on it
    with pytest.raises(ValueError) as refused:
        find_compiler(given, {"CC": cc})
    text = str(refused.value)
    assert text.startswith("compiler: expected a C compiler on PATH, got ")
    assert where in text and "install gcc, or name a compiler in CC or backend.compiler" in text


def test_a_compiler_that_does_not_answer_version_is_refused(tmp_path: Path) -> None:
    broken = wrapper(tmp_path, "mute-cc", version="exit 1")
    with pytest.raises(ValueError, match="^compiler: expected a C compiler that answers "
                                         "--version, got .*mute-cc"):
        find_compiler(str(broken), {})
    with pytest.raises(ValueError, match="^compiler: expected a command"):
        find_compiler(None, {"CC": 'gcc "unclosed'})


def test_the_backend_refuses_before_it_makes_a_folder(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    monkeypatch.delenv("CC", raising=False)
    with pytest.raises(ValueError, match="^compiler: expected a C compiler on PATH"):
        CpuBackend(**FAST)
    assert not list(tmp_path.glob(f"{TEMP_PREFIX}*"))


def test_the_spec_error_points_at_backend_compiler_even_when_unset(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = spec_from_dict({"workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
                           "backend": {"name": "cpu", "work_dir": str(tmp_path / "w")}},
                          source="cpu.json")
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("CC", "")
    with pytest.raises(SpecError) as refused:
        make_backend(spec)
    assert str(refused.value).startswith("cpu.json: key 'backend.compiler': expected a C "
                                         "compiler on PATH, got 'cc' (the default")
