"""A refused run leaves an SQLite file's journal mode alone; a run that starts uses WAL."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
OPTUNA = Path(sys.executable).parent / "optuna"
REPO = Path(__file__).resolve().parents[2]


def _format_versions(db: Path) -> bytes:
    """Header bytes 18-19: 1,1 for a rollback journal, 2,2 for WAL."""
    return db.read_bytes()[18:20]


def test_a_refused_run_leaves_a_rollback_journal_file_as_it_was(tmp_path: Path) -> None:
    db = tmp_path / "made_by_optuna.db"
    subprocess.run([str(OPTUNA), "create-study", "--storage", f"sqlite:///{db}",
                    "--study-name", "theirs"], check=True, capture_output=True)
    assert _format_versions(db) == b"\x01\x01"
    before = db.read_bytes()

    run = subprocess.run([str(AOE_TUNE), "--storage", f"sqlite:///{db}", "--study-name",
                          "no_such_study"], capture_output=True, text=True, cwd=tmp_path)

    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    assert _format_versions(db) == b"\x01\x01"
    assert db.read_bytes() == before
    assert not (tmp_path / "made_by_optuna.db-wal").exists()


def test_a_file_the_run_creates_is_in_wal_mode(tmp_path: Path) -> None:
    db = tmp_path / "aoe.db"
    run = subprocess.run([str(AOE_TUNE), "--config", str(REPO / "studies" /
                          "qwen25_7b_decode_910b2.json"), "--storage", f"sqlite:///{db}",
                          "--n-trials", "2", "--sampler", "random"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert _format_versions(db) == b"\x02\x02"


def test_a_run_that_starts_on_a_rollback_journal_file_switches_it_to_wal(
        tmp_path: Path) -> None:
    db = tmp_path / "made_by_optuna.db"
    subprocess.run([str(OPTUNA), "create-study", "--storage", f"sqlite:///{db}",
                    "--study-name", "theirs", "--direction", "maximize"], check=True,
                   capture_output=True)
    run = subprocess.run([str(AOE_TUNE), "--config", str(REPO / "studies" /
                          "qwen25_7b_decode_910b2.json"), "--storage", f"sqlite:///{db}",
                          "--study-name", "theirs", "--n-trials", "2", "--sampler", "random"],
                         capture_output=True, text=True, cwd=tmp_path)
    assert run.returncode == 0, run.stderr
    assert _format_versions(db) == b"\x02\x02"  # many workers: no fsync per attribute
