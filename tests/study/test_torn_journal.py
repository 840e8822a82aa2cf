"""A Journal file cut midway (disk full, truncate) is repaired on resume, never made worse."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import optuna
import pytest
from optuna.storages.journal import JournalFileBackend, JournalStorage

from tests.support.preloaded import aoe_tune_forked

SPEC = Path(__file__).resolve().parents[2] / "studies" / "qwen25_7b_decode_910b2.json"


def _tune(journal: Path, n_trials: int, *extra: str) -> subprocess.CompletedProcess[str]:
    return aoe_tune_forked(["--config", str(SPEC), "--storage", str(journal),
                            "--study-name", "s", "--sampler", "random",
                            "--n-trials", str(n_trials), *extra], journal.parent)


def _trials(journal: Path) -> list[optuna.trial.FrozenTrial]:
    storage = JournalStorage(JournalFileBackend(str(journal)))
    return optuna.load_study(study_name="s", storage=storage).trials


def _mid_trial_cut(journal: bytes) -> int:
    """About half-way, inside the first parameter record from the middle on.

    The torn trial keeps its worker mark, so the resume finds that worker dead by
    pid at once. A cut between a trial's creation and its worker mark would leave
    a trial that recovery fails only after a minute (``ORPHAN_AFTER_S``): where a
    plain `truncate -s 50%` lands depends on the random configs' record sizes, and
    it landed there in about one run of four.
    """
    offset = 0
    for line in journal.split(b"\n")[:-1]:
        if offset + len(line) >= len(journal) // 2 and "param_name" in json.loads(line):
            return offset + len(line) // 2  # never on a line's end
        offset += len(line) + 1
    raise AssertionError("no parameter record in the second half of the journal")


@pytest.mark.parametrize("cut", ["half", "partial_line"])
def test_a_torn_journal_is_set_aside_and_the_resume_goes_on(tmp_path: Path, cut: str) -> None:
    journal = tmp_path / "j.log"
    assert _tune(journal, 4).returncode == 0
    original = journal.read_bytes()
    if cut == "half":
        os.truncate(journal, _mid_trial_cut(original))
    else:
        os.truncate(journal, len(original) - 7)  # the last record loses its end
    torn = journal.read_bytes()
    assert not torn.endswith(b"\n")

    run = _tune(journal, 6)

    assert run.returncode == 0, run.stderr
    assert "Traceback" not in run.stderr
    notes = [ln for ln in run.stderr.splitlines() if "last record was torn" in ln]
    assert len(notes) == 1, run.stderr
    copies = list(tmp_path.glob("j.log.torn-*"))
    assert len(copies) == 1 and copies[0].read_bytes() == torn
    assert journal.read_bytes().endswith(b"\n")
    done = [t for t in _trials(journal) if t.state == optuna.trial.TrialState.COMPLETE]
    assert len(done) >= 6  # the resume measured up to its budget, and the file still loads


def test_a_bad_record_before_good_ones_is_refused_and_left_unchanged(tmp_path: Path) -> None:
    journal = tmp_path / "j.log"
    assert _tune(journal, 2).returncode == 0
    lines = journal.read_bytes().split(b"\n")
    lines[3] = lines[3][: len(lines[3]) // 2]  # corrupt in the middle, then an unfinished tail
    journal.write_bytes(b"\n".join(lines)[:-5])
    before = journal.read_bytes()

    run = _tune(journal, 4)

    assert run.returncode == 2
    assert "Traceback" not in run.stderr
    assert "does not parse" in run.stderr
    assert journal.read_bytes() == before
    assert not list(tmp_path.glob("j.log.torn-*"))
