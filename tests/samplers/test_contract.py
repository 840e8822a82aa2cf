"""The constraint contract, checked once for every sampler that promises it.

The samplers are the ones ``registry.CONSTRAINT_AWARE`` names (gp-ucb and
reinforce today); one named there gets every check below without a test of
its own. The contract, on a study whose SearchSpace has rules:

- every proposal is a feasible config;
- no proposal is a config another trial measured, failed on or was refused
  (infeasible), whichever sampler proposed it;
- no proposal is a config a RUNNING trial holds: its params, its enqueued
  fixed params, or only the claim of a proposal it has not suggested yet;
- a study run to N trials, then resumed by a fresh sampler with the same
  seed to M, is the straight M-trial run, trial for trial;
- workers sharing one study never measure a config twice.

Every check runs on a small real study: the spec below (the decode GEMMs of
Qwen2.5-7B on a 910B2, 216 configs of which 148 are feasible, a user rule,
the simulator's hidden failures), real SQLite storage, and aoe-tune's own
code (its CLI, ``TuningObjective``) to measure.
"""

from __future__ import annotations

import subprocess
import sys
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import optuna
import pytest
import torch
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_INFEASIBLE, ATTR_REPEAT_OF
from aoe_optuna.cli.main import main
from aoe_optuna.samplers.registry import (
    CONSTRAINT_AWARE,
    constraint_aware_names,
    make_sampler,
    sampler_names,
)
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.loader import StudySpec, load_spec
from aoe_optuna.study.run.objective import (
    MeasurementFailed,
    TuningObjective,
    is_measured,
    suggest_config,
)
from aoe_optuna.study.storage.opening import open_storage

optuna.logging.set_verbosity(optuna.logging.WARNING)

SAMPLERS = pytest.mark.parametrize("name", constraint_aware_names())
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"

SPEC = """{
  "op_name": "GemmKernel",
  "search_space": {
    "tile_m": [16, 64, 128, 256], "tile_k": [16, 64, 256], "tile_n": [16, 64, 256],
    "pipeline": ["none", "single_buffer", "double_buffer"], "l1_prefetch": [0, 1]
  },
  "constraints": ["tile_m * tile_n <= 16384"],
  "hardware": {"soc": "Ascend910B2"},
  "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024,
               "tp": 1, "dtype": "fp16"},
  "baseline": {"tile_m": 128, "tile_n": 64, "tile_k": 64, "pipeline": "double_buffer",
               "l1_prefetch": 1},
  "backend": {"name": "simulator", "noise": 0.01, "seed": 0, "hidden_failures": true}
}
"""


@pytest.fixture
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "small_decode.json"
    path.write_text(SPEC)
    return path


def _tune(spec: Path, url: str, study: str, n: int, sampler: str, seed: int) -> None:
    assert main(["--config", str(spec), "--storage", url, "--study-name", study,
                 "--n-trials", str(n), "--sampler", sampler, "--seed", str(seed),
                 "--no-progress"]) == 0


def _key(params: dict[str, Any]) -> tuple:
    return tuple(sorted(params.items()))


def _feasible(space: SearchSpace, params: dict[str, Any]) -> bool:
    return bool(space.is_feasible(space.index(params)[None, :])[0])


def _trials(url: str, study: str) -> list[FrozenTrial]:
    return optuna.load_study(study_name=study, storage=url).get_trials()


def test_the_registry_names_registered_samplers() -> None:
    assert CONSTRAINT_AWARE and set(sampler_names()) >= CONSTRAINT_AWARE
    assert constraint_aware_names() == [n for n in sampler_names() if n in CONSTRAINT_AWARE]


@pytest.mark.slow  # 36 trials a sampler, 6-8 s of CPU
@SAMPLERS
def test_never_infeasible_never_already_tried(name: str, spec_file: Path, tmp_path: Path) -> None:
    """A study begun by random search (infeasible, failed and measured configs), then
    continued by the sampler: none of its proposals is infeasible or was tried before."""
    space = load_spec(spec_file).space
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    _tune(spec_file, url, "s", 12, "random", seed=5)
    n_before = len(_trials(url, "s"))
    _tune(spec_file, url, "s", 36, name, seed=0)
    trials = _trials(url, "s")
    before, own = trials[:n_before], trials[n_before:]
    # the history holds every kind of config a sampler must not propose again
    assert any(ATTR_INFEASIBLE in t.user_attrs for t in before)
    assert any(t.state == TrialState.FAIL and is_measured(t) for t in before)
    assert len(own) == 24
    assert all(_feasible(space, t.params) for t in own)
    assert not [t for t in own if ATTR_REPEAT_OF in t.user_attrs or ATTR_INFEASIBLE
                in t.user_attrs]
    seen: set[tuple] = {_key(t.params) for t in before}
    for t in own:
        assert _key(t.params) not in seen, f"trial {t.number} repeats {t.params}"
        seen.add(_key(t.params))  # nor a config of its own earlier trials


@SAMPLERS
def test_running_trials_configs_are_not_proposed_again(
    name: str, spec_file: Path, tmp_path: Path
) -> None:
    """Two workers with the same seed ask in turn and measure nothing: each proposal is
    made while the previous trial holds only its claim and the earlier ones their params;
    the first trial is an enqueued config. Every config differs from every other and
    from the finished trials' ones."""
    spec = load_spec(spec_file)
    space = spec.space
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    _tune(spec_file, url, "r", 10, "random", seed=2)
    finished = {_key(t.params) for t in _trials(url, "r")}
    workers = [optuna.load_study(study_name="r", storage=url,
                                 sampler=make_sampler(name, space=space, seed=0))
               for _ in range(2)]
    enqueued = next(c for c in (space.config(r) for r in space.all_feasible())
                    if _key(c) not in finished)
    workers[1].enqueue_trial(enqueued)
    asked: list[optuna.Trial] = []
    for i in range(16):
        trial = workers[i % 2].ask()
        _ = trial.relative_params  # the sampler proposes and claims; nothing is suggested yet
        if asked:
            suggest_config(asked[-1], space)  # the previous trial: RUNNING with its params
        asked.append(trial)
    suggest_config(asked[-1], space)
    configs = [_key(t.params) for t in asked]
    assert configs[0] == _key(enqueued)
    assert len(set(configs)) == len(configs), Counter(configs).most_common(2)
    assert not set(configs) & finished
    assert all(_feasible(space, t.params) for t in asked)
    running = _trials(url, "r")[-len(asked):]
    assert all(t.state == TrialState.RUNNING for t in running)


@pytest.mark.slow  # 51 trials a sampler, 6-8 s of CPU
@SAMPLERS
def test_resumed_study_is_the_straight_run(name: str, spec_file: Path, tmp_path: Path) -> None:
    """N trials, then a fresh sampler with the same seed to M: the straight M-trial run."""
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    _tune(spec_file, url, "straight", 20, name, seed=3)
    _tune(spec_file, url, "resumed", 11, name, seed=3)
    _tune(spec_file, url, "resumed", 20, name, seed=3)

    def run(study: str) -> list[tuple]:
        return [(t.state, _key(t.params), t.value) for t in _trials(url, study)]

    straight, resumed = run("straight"), run("resumed")
    assert len(straight) >= 20
    assert resumed == straight


@SAMPLERS
def test_two_workers_on_one_study_measure_no_config_twice(
    name: str, spec_file: Path, tmp_path: Path
) -> None:
    """Two threads, each a worker with its own sampler and storage connection, measure
    one study at the same time."""
    spec = load_spec(spec_file)
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    _tune(spec_file, url, "w", 1, name, seed=0)  # creates the study, measures the baseline
    errors: list[BaseException] = []

    def worker(seed: int) -> None:
        try:
            study = optuna.load_study(study_name="w", storage=open_storage(url),
                                      sampler=make_sampler(name, space=spec.space, seed=seed))
            study.optimize(TuningObjective.from_spec(spec), n_trials=8,
                           catch=(MeasurementFailed,))
        except BaseException as exc:  # re-raised in the test's thread
            errors.append(exc)

    threads_before = torch.get_num_threads()  # the samplers set it per call, process-wide
    workers = [threading.Thread(target=worker, args=(seed,)) for seed in (1, 2)]
    try:
        for w in workers:
            w.start()
        for w in workers:
            w.join(timeout=300)
    finally:
        torch.set_num_threads(threads_before)
    assert not errors, errors
    _check_no_config_twice(spec, _trials(url, "w"), 17)


def _check_no_config_twice(spec: StudySpec, trials: list[FrozenTrial], n: int) -> None:
    assert len(trials) == n
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    measured = Counter(_key(t.params) for t in trials if is_measured(t))
    assert sum(measured.values()) == n and max(measured.values()) == 1, measured.most_common(2)
    assert all(_feasible(spec.space, t.params) for t in trials)


@pytest.mark.slow
@SAMPLERS
def test_worker_processes_measure_no_config_twice(
    name: str, spec_file: Path, tmp_path: Path
) -> None:
    """aoe-tune --n-workers 2: real processes, each with its own sampler, one study."""
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    proc = subprocess.run(
        [str(AOE_TUNE), "--config", str(spec_file), "--storage", url, "--study-name", "p",
         "--n-trials", "20", "--n-workers", "2", "--sampler", name, "--seed", "0",
         "--no-progress"], capture_output=True, text=True, timeout=600,
    )
    assert proc.returncode == 0, proc.stderr
    trials = _trials(url, "p")
    assert not [t for t in trials if t.state == TrialState.RUNNING]
    measured = Counter(_key(t.params) for t in trials if is_measured(t))
    assert sum(measured.values()) == 20 and max(measured.values()) == 1, measured.most_common(2)
    assert all(_feasible(load_spec(spec_file).space, t.params) for t in trials)
