"""A storage whose writes start failing mid-run (a file size limit, as a full disk):
one line naming the storage and the cause, exit 2, and what was stored still loads.

On a Journal file this ended in three tracebacks ("Should not reach.") and left
a record cut midway, after which any other worker's append made the file
unreadable. Real ``aoe-tune`` processes; the limit is set in the child only.
"""

from __future__ import annotations

import functools
import json
import resource
import signal
import subprocess
from pathlib import Path
from typing import Any

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend, JournalStorage

from tests.support.preloaded import aoe_tune_forked
from tests.support.run_banner import joined_lines

SPEC = Path(__file__).resolve().parents[2] / "studies" / "qwen25_7b_decode_910b2.json"
ROOM_BYTES = 24_000  # a few trials' records past what the first run stored


def _small_files(limit: int) -> None:
    """Writes past ``limit`` bytes fail with EFBIG, as on a full disk."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))


def _tune(url: str, n_trials: int, cwd: Path, limit: int | None = None
          ) -> subprocess.CompletedProcess[str]:
    return aoe_tune_forked(["--config", str(SPEC), "--storage", url, "--study-name", "s",
                            "--sampler", "random", "--seed", "1", "--n-trials",
                            str(n_trials), "--no-progress"], cwd,
                           before=functools.partial(_small_files, limit) if limit else None)


def _completed(url: str) -> dict[int, tuple[Any, ...]]:
    """The study's completed trials, read by plain Optuna."""
    storage = (JournalStorage(JournalFileBackend(url)) if url.endswith(".log")
               else optuna.storages.RDBStorage(url))
    trials = optuna.load_study(study_name="s", storage=storage).trials
    return {t.number: (t.params, t.value, t.user_attrs) for t in trials
            if t.state == optuna.trial.TrialState.COMPLETE}


@pytest.mark.slow  # three aoe-tune processes
@pytest.mark.parametrize("kind", ["journal", "sqlite"])
def test_a_write_failing_mid_run_is_one_line_and_keeps_what_was_stored(
        tmp_path: Path, kind: str) -> None:
    path = tmp_path / ("j.log" if kind == "journal" else "aoe.db")
    url = str(path) if kind == "journal" else f"sqlite:///{path}"
    assert _tune(url, 6, tmp_path).returncode == 0
    stored = _completed(url)
    assert len(stored) >= 6

    run = _tune(url, 400, tmp_path, limit=path.stat().st_size + ROOM_BYTES)

    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-3000:]
    lines = [ln for ln in joined_lines(run.stderr) if not ln.startswith("study ")]
    assert len(lines) == 1, run.stderr[-3000:]
    assert lines[0].startswith(f"aoe-tune: error: storage {url}: ")
    assert ("File too large: the file size limit (ulimit -f) was reached" if kind == "journal"
            else "(is the disk full? what was stored is kept") in lines[0]
    assert joined_lines(run.stderr)[0].startswith("study s in ")  # failed mid-run, not opening
    now = _completed(url)
    assert {n: now[n] for n in stored} == stored
    if kind == "journal":  # every record whole: another worker may append at once
        data = path.read_bytes()
        assert data.endswith(b"\n")
        assert all(isinstance(json.loads(line), dict) for line in data.splitlines())

    resumed = _tune(url, len(now) + 2, tmp_path)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    assert "torn" not in resumed.stderr
    assert not list(tmp_path.glob("*.torn-*"))
