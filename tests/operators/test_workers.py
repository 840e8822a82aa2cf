"""Operator runs with worker processes: on this host, and a follower as another host would."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import ALLOCATION_ATTR, DONE_ATTR
from aoe_optuna.study.objective import is_measured
from tests.operators.test_tuner import SPEC  # the same small decode study

pytestmark = pytest.mark.slow

PARENT = "Gemm-Ascend910B2-qwen2.5-7b-decode-b4-operators"


def aoe(*args: str) -> list[str]:
    return [sys.executable, "-m", "aoe_optuna.cli.main", *args]


def started(url: str) -> bool:
    """The tuner has written its plan (tables may still be in creation before that)."""
    try:
        parent = optuna.load_study(study_name=PARENT, storage=url)
    except Exception:  # no file, no tables yet, or no such study yet
        return False
    return parent.user_attrs.get(DONE_ATTR) is False


def check_run(url: str, budget: int) -> None:
    parent = optuna.load_study(study_name=PARENT, storage=url)
    assert parent.user_attrs[DONE_ATTR] is True
    total = 0
    for name, target in parent.user_attrs[ALLOCATION_ATTR].items():
        study = optuna.load_study(study_name=name, storage=url)
        done = [t for t in study.get_trials(deepcopy=False) if is_measured(t)]
        configs = [json.dumps(t.params, sort_keys=True) for t in done]
        assert len(configs) == len(set(configs)), f"{name}: a config measured twice"
        assert len(done) <= target, f"{name}: {len(done)} measured, {target} allocated"
        total += len(done) + int(study.user_attrs.get("retimed", {}).get("cost", 0))
    assert total <= budget


def test_two_workers_measure_each_chunk_and_keep_the_allocation(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    url = f"sqlite:///{tmp_path / 'w.db'}"
    run = subprocess.run(aoe("operators", "--config", str(spec), "--storage", url,
                             "--n-trials", "40", "--n-workers", "2", "--sampler", "gp-ucb",
                             "--seed", "0", "--no-progress"),
                         capture_output=True, text=True, timeout=600, cwd=tmp_path)
    assert run.returncode == 0, run.stderr[-2000:]
    check_run(url, 40)


def test_a_follower_joins_the_allocation_until_the_run_is_done(tmp_path: Path) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(SPEC))
    url = f"sqlite:///{tmp_path / 'f.db'}"
    tuner = subprocess.Popen(aoe("operators", "--config", str(spec), "--storage", url,
                                 "--n-trials", "80", "--sampler", "gp-ucb", "--seed", "0",
                                 "--no-progress"),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             cwd=tmp_path)
    deadline = time.monotonic() + 120
    while not started(url):
        assert time.monotonic() < deadline and tuner.poll() is None
        time.sleep(0.2)
    follower = subprocess.run(aoe("operators", "--storage", url, "--study-name", PARENT,
                                  "--follow"),
                              capture_output=True, text=True, timeout=600, cwd=tmp_path)
    out, err = tuner.communicate(timeout=600)
    assert tuner.returncode == 0, err[-2000:]
    assert follower.returncode == 0, follower.stderr[-2000:]
    assert f"{PARENT} is done; joined" in follower.stderr
    check_run(url, 80)
