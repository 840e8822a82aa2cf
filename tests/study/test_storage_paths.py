"""Storage paths no storage can live in, and files damaged inside: one line, exit 2, untouched.

A folder, a named pipe, a device or a symlink loop named as a Journal or SQLite
storage ended in a traceback in tune, resume and export, and a named pipe as a
Journal hung silently; an export from an SQLite file with damaged pages ended in
a traceback. Each is refused in one line, and the path is left as it was.
"""

from __future__ import annotations

import os
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main

ROOT = Path(__file__).resolve().parents[2]
AOE = str(ROOT / "studies" / "aoe_config.json")
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"


def _folder(path: Path) -> None:
    path.mkdir()


def _symlink_loop(path: Path) -> None:
    os.symlink(path.name, path)


def _device(path: Path) -> None:
    os.symlink("/dev/null", path)


MAKERS: dict[str, Callable[[Path], None]] = {
    "folder": _folder, "symlink loop": _symlink_loop, "device": _device}
SAYS = {"folder": "is a folder", "symlink loop": "Too many levels of symbolic links",
        "device": "is a character device, not a regular file",
        "fifo": "is a named pipe (FIFO), not a regular file"}


def _storage(tmp_path: Path, kind: str) -> tuple[Path, str]:
    path = tmp_path / ("study.log" if kind == "journal" else "study.db")
    return path, str(path) if kind == "journal" else f"sqlite:///{path}"


def _command(command: str, url: str, tmp_path: Path) -> list[str]:
    return {
        "tune": ["--config", AOE, "--storage", url, "--no-progress"],
        "resume": ["--storage", url, "--study-name", "s", "--n-trials", "2", "--no-progress"],
        "export": ["export", "--storage", url, "--study-name", "s",
                   "--output", str(tmp_path / "k.cpp")],
    }[command]


def _listing(folder: Path) -> list[tuple[str, int]]:
    return sorted((p.name, os.lstat(p).st_mode) for p in folder.iterdir())


def _one_line(err: str, command: str = "tune") -> str:
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    prog = "aoe-tune export" if command == "export" else "aoe-tune"  # who says it
    assert lines[0].startswith(f"{prog}: error: storage "), err
    return lines[0]


@pytest.mark.parametrize("command", ["tune", "resume", "export"])
@pytest.mark.parametrize("kind", ["journal", "sqlite"])
@pytest.mark.parametrize("what", sorted(MAKERS))
def test_a_path_that_cannot_hold_a_storage_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], what: str, kind: str,
        command: str) -> None:
    path, url = _storage(tmp_path, kind)
    MAKERS[what](path)
    before = _listing(tmp_path)
    assert main(_command(command, url, tmp_path)) == 2
    assert SAYS[what] in _one_line(capsys.readouterr().err, command)
    assert _listing(tmp_path) == before  # no lock, no database, no export written


def test_a_journal_folder_is_answered_with_a_file_in_it(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "runs.log").mkdir()
    assert main(_command("tune", str(tmp_path / "runs.log"), tmp_path)) == 2
    assert f"e.g. {tmp_path / 'runs.log' / 'aoe.log'}" in _one_line(capsys.readouterr().err)


@pytest.mark.parametrize("kind,command", [
    ("journal", "tune"), ("journal", "resume"), ("journal", "export"), ("sqlite", "tune")])
def test_a_named_pipe_as_storage_is_refused_not_waited_on(
        tmp_path: Path, kind: str, command: str) -> None:
    """A process of its own: opening the pipe to read it blocked forever, silently."""
    path, url = _storage(tmp_path, kind)
    os.mkfifo(path)
    run = subprocess.run([str(AOE_TUNE), *_command(command, url, tmp_path)],
                         capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert run.returncode == 2
    assert SAYS["fifo"] in _one_line(run.stderr, command)
    assert stat.S_ISFIFO(os.lstat(path).st_mode)
    assert sorted(p.name for p in tmp_path.iterdir()) == [path.name]


def test_export_from_an_sqlite_file_with_damaged_pages_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = tmp_path / "aoe.db"
    url = f"sqlite:///{db}"
    assert main(["--config", AOE, "--storage", url, "--study-name", "s", "--n-trials", "2",
                 "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    capsys.readouterr()
    with sqlite3.connect(db) as con:  # everything in the main file, then damage one table
        con.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        page_size = con.execute("PRAGMA page_size").fetchone()[0]
        root = con.execute("SELECT rootpage FROM sqlite_master "
                           "WHERE name = 'trial_params'").fetchone()[0]
    con.close()
    data = bytearray(db.read_bytes())
    data[(root - 1) * page_size:root * page_size] = b"\xff" * page_size
    db.write_bytes(bytes(data))

    assert main(["export", "--storage", url, "--study-name", "s",
                 "--output", str(tmp_path / "k.cpp")]) == 2
    line = _one_line(capsys.readouterr().err, "export")
    assert "database disk image is malformed (the database file is damaged)" in line
    assert db.read_bytes() == bytes(data)
    assert not (tmp_path / "k.cpp").exists()


def test_a_folder_in_the_journal_locks_place_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """No process can take or break it (Optuna's own wait spins on it forever)."""
    journal = tmp_path / "study.log"
    (tmp_path / "study.log.lock").mkdir()
    assert main(_command("tune", str(journal), tmp_path)) == 2
    line = _one_line(capsys.readouterr().err)
    assert f"{journal}.lock is a folder, not a journal lock" in line
    assert (tmp_path / "study.log.lock").is_dir()
