"""Storage problems end a run with one line and a non-zero exit, and change nothing."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import main
from tests.support.run_banner import joined_lines

ROOT = Path(__file__).resolve().parents[2]
AOE = str(ROOT / "studies" / "aoe_config.json")
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"

needs_non_root = pytest.mark.skipif(
    os.geteuid() == 0, reason="root ignores file permissions, so read-only cannot be tested"
)


def _one_line_error(err: str) -> str:
    """The run's error is one line (after the banner, when the study had opened)."""
    lines = [ln for ln in joined_lines(err) if not ln.startswith("study ")]
    assert len(lines) == 1, err
    assert lines[0].startswith("aoe-tune: error:") and "Traceback" not in err
    return lines[0]


def _study_db(tmp_path: Path) -> str:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", AOE, "--storage", url, "--study-name", "s", "--n-trials", "2",
                 "--sampler", "random", "--seed", "0", "--no-progress"]) == 0
    return url


@pytest.mark.slow  # waits out SQLite's lock timeout
def test_locked_sqlite_file(tmp_path: Path) -> None:
    url = _study_db(tmp_path)
    n = len(optuna.load_study(study_name="s", storage=url).trials)
    holder = sqlite3.connect(tmp_path / "aoe.db", isolation_level=None)
    holder.execute("BEGIN EXCLUSIVE")
    try:
        env = {**os.environ, "AOE_SQLITE_LOCK_TIMEOUT_S": "1"}
        proc = subprocess.run(
            [str(AOE_TUNE), "--storage", url, "--study-name", "s", "--n-trials", "5",
             "--sampler", "random", "--no-progress"],
            capture_output=True, text=True, timeout=300, env=env,
        )
    finally:
        holder.execute("ROLLBACK")
        holder.close()
    assert proc.returncode == 2
    assert "locked" in _one_line_error(proc.stderr)
    assert len(optuna.load_study(study_name="s", storage=url).trials) == n


def test_not_an_sqlite_file(tmp_path: Path, capsys) -> None:
    bad = tmp_path / "notes.db"
    bad.write_text("just text\n")
    assert main(["--config", AOE, "--storage", f"sqlite:///{bad}", "--no-progress"]) == 2
    assert "not an SQLite database" in _one_line_error(capsys.readouterr().err)
    assert bad.read_text() == "just text\n"


def test_journal_in_missing_folder(tmp_path: Path, capsys) -> None:
    log = tmp_path / "nowhere" / "aoe.log"
    assert main(["--config", AOE, "--storage", str(log), "--no-progress"]) == 2
    assert "does not exist" in _one_line_error(capsys.readouterr().err)
    assert not log.parent.exists()


@needs_non_root
def test_read_only_file_and_folder(tmp_path: Path, capsys) -> None:
    url = _study_db(tmp_path)
    capsys.readouterr()
    db = tmp_path / "aoe.db"
    db.chmod(0o444)
    assert main(["--storage", url, "--study-name", "s", "--n-trials", "4",
                 "--no-progress"]) == 2
    assert "read-only" in _one_line_error(capsys.readouterr().err)
    ro = tmp_path / "ro"
    ro.mkdir()
    ro.chmod(0o555)
    assert main(["--config", AOE, "--storage", f"sqlite:///{ro / 'x.db'}",
                 "--no-progress"]) == 2
    assert "not writable" in _one_line_error(capsys.readouterr().err)
