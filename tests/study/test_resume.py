"""Killed and interrupted runs lose nothing: real processes, real signals, real storage.

The CPU backend builds and times a real kernel; the signal lands at a named
fault point (aoe_optuna/study/trials/fault_points.py), so it hits the same step every run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from aoe_optuna.study.run.objective import count_measured

ROOT = Path(__file__).resolve().parents[2]
CPU_SPEC = ROOT / "studies" / "cpu_gemm.json"
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"

pytestmark = [
    pytest.mark.slow,  # real processes, gcc builds, signals: 15-20 s
    pytest.mark.skipif(not CPU_SPEC.exists(), reason="studies/cpu_gemm.json missing"),
]


def _small_cpu_spec(tmp_path: Path) -> Path:
    """The shipped CPU study on a smaller GEMM: a measurement takes about 0.4 s here."""
    text = CPU_SPEC.read_text().replace(
        '"M": 512, "K": 512, "N": 512', '"M": 128, "K": 128, "N": 128'
    )
    spec = tmp_path / "cpu_small.json"
    spec.write_text(text)
    return spec


def _as_at_a_terminal() -> None:
    # A suite started in the background by a non-interactive shell (``cmd &``) inherits
    # SIGINT ignored, and so would aoe-tune; at a terminal, Ctrl-C is delivered.
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _start(args: list[str], env: dict[str, str]) -> subprocess.Popen:
    return subprocess.Popen(
        [str(AOE_TUNE), *args, "--no-progress"], stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True, env=env, preexec_fn=_as_at_a_terminal,
    )


@pytest.fixture
def env(tmp_path: Path) -> dict[str, str]:
    e = dict(os.environ)
    e["AOE_BUILD_CACHE"] = str(tmp_path / "build-cache")
    e["PYTHONUNBUFFERED"] = "1"
    return e


def test_sigkill_mid_measurement_loses_nothing(tmp_path: Path, env: dict[str, str]) -> None:
    spec = _small_cpu_spec(tmp_path)
    db = tmp_path / "aoe.db"
    url = f"sqlite:///{db}"
    args = ["--config", str(spec), "--storage", url, "--study-name", "k", "--n-trials", "4",
            "--sampler", "random", "--seed", "0"]
    # the process kills itself as its second measurement starts: a trial RUNNING, no result
    proc = _start(args, {**env, "AOE_FAULT_AT": "measure:2"})
    proc.wait(timeout=300)
    assert proc.returncode == -signal.SIGKILL, proc.communicate()
    study = optuna.load_study(study_name="k", storage=url)
    (killed,) = study.get_trials(states=(TrialState.RUNNING,))
    done_before = [t.number for t in study.get_trials(states=(TrialState.COMPLETE,))]
    # the same command again: the dead worker's trial is failed and its config retried
    rerun = _start(args, env)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    study = optuna.load_study(study_name="k", storage=url)
    trials = study.get_trials()
    assert count_measured(trials) == 4
    assert trials[killed.number].state == TrialState.FAIL
    retried = [t for t in trials if t.system_attrs.get("failed_trial") == killed.number]
    assert len(retried) == 1 and retried[0].params == killed.params
    assert retried[0].state in (TrialState.COMPLETE, TrialState.FAIL)
    for n in done_before:  # completed trials are untouched
        assert trials[n].state == TrialState.COMPLETE


def test_ctrl_c_stops_cleanly_and_the_same_command_resumes(
    tmp_path: Path, env: dict[str, str]
) -> None:
    spec = _small_cpu_spec(tmp_path)
    db = tmp_path / "aoe.db"
    url = f"sqlite:///{db}"
    # measurements left after the interrupted one, so the run cannot end before the signal
    args = ["--config", str(spec), "--storage", url, "--study-name", "c", "--n-trials", "6",
            "--sampler", "random", "--seed", "1"]
    # Ctrl-C as the second measurement starts
    proc = _start(args, {**env, "AOE_FAULT_AT": "measure:2", "AOE_FAULT_SIGNAL": "SIGINT"})
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 130, err  # stderr says why when a loaded machine delays the signal
    assert "Resume with" in err and "--study-name c" in err
    assert "Traceback" not in err
    study = optuna.load_study(study_name="c", storage=url)
    assert not study.get_trials(states=(TrialState.RUNNING,))
    rerun = _start(args, env)
    out, err = rerun.communicate(timeout=300)
    assert rerun.returncode == 0, err
    study = optuna.load_study(study_name="c", storage=url)
    assert count_measured(study.get_trials()) == 6
