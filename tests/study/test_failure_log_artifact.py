"""A failed build's whole compiler output is kept as an artifact of its trial.

The build fails for real: the cpu study is pointed at the C++ compiler, which
rejects the C kernel (``restrict`` is not a C++ keyword).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import json5
import optuna
import pytest
from optuna.artifacts import FileSystemArtifactStore, download_artifact, get_all_artifact_meta
from optuna.trial import TrialState

from aoe_optuna.attrs import ATTR_FAILURE, ATTR_FAILURE_KIND, ATTR_MEASURED
from aoe_optuna.cli.main import NOTHING_MEASURED, main
from aoe_optuna.study.run.objective import count_measured, is_measured

ROOT = Path(__file__).resolve().parents[2]
CPU_SPEC = ROOT / "studies" / "cpu_gemm.json"
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"

pytestmark = pytest.mark.skipif(shutil.which("g++") is None, reason="needs g++ on PATH")


def _spec_with_compiler(tmp_path: Path, compiler: str) -> Path:
    spec = json5.loads(CPU_SPEC.read_text())
    spec["backend"]["compiler"] = compiler
    path = tmp_path / "cpu_gxx.json"
    path.write_text(json.dumps(spec))
    return path


def test_failed_build_keeps_the_compiler_output_on_its_trial(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    spec = _spec_with_compiler(tmp_path, "g++")
    assert main(["--config", str(spec), "--storage", url, "--study-name", "gxx",
                 "--n-trials", "3", "--sampler", "random", "--seed", "0",
                 "--no-progress"]) == NOTHING_MEASURED  # every build fails: nothing to export
    study = optuna.load_study(study_name="gxx", storage=url)
    failed = study.get_trials(states=(TrialState.FAIL,))
    assert len(failed) == 3
    store = FileSystemArtifactStore(str(tmp_path / "aoe.db.artifacts"))
    logs = {}
    for trial in failed:
        kind = trial.user_attrs[ATTR_FAILURE_KIND]
        assert trial.user_attrs[ATTR_MEASURED] is True  # the log came first, the result whole
        (meta,) = get_all_artifact_meta(trial, storage=study._storage)
        assert meta.filename == f"{kind}.log"
        out = tmp_path / f"log{trial.number}.txt"
        download_artifact(artifact_store=store, artifact_id=meta.artifact_id,
                          file_path=str(out))
        logs[trial.number] = (kind, out.read_text(), trial.user_attrs[ATTR_FAILURE])
    builds = [(log, reason) for kind, log, reason in logs.values() if kind == "build"]
    assert builds, logs  # g++ rejects the kernels that use ``restrict``
    for log, reason in builds:
        assert log.startswith("$ g++ ") and "-o libgemm.so kernel.c" in log
        assert "exit status 1" in log
        assert "error:" in log and "restrict" in log  # the compiler's own words
        # the whole output, where the reason keeps only its first lines
        assert log.count("error:") > reason.count("error:")
    # the study's own artifacts are apart from the trials'
    assert [m.filename for m in get_all_artifact_meta(study)] == ["spec.json"]


def test_no_log_artifact_without_a_file_store(tmp_path: Path) -> None:
    """An in-memory study (benchmarks) has no store: the failure is kept, no log written."""
    from aoe_optuna.spec.loader import load_spec
    from aoe_optuna.study.run.objective import MeasurementFailed, TuningObjective

    spec = load_spec(str(_spec_with_compiler(tmp_path, "g++")))
    study = optuna.create_study(direction="maximize",
                                sampler=optuna.samplers.RandomSampler(seed=0))
    study.optimize(TuningObjective.from_spec(spec), n_trials=3, catch=(MeasurementFailed,))
    assert all(t.state == TrialState.FAIL for t in study.trials)
    assert "build" in {t.user_attrs[ATTR_FAILURE_KIND] for t in study.trials}
    assert all(get_all_artifact_meta(t, storage=study._storage) == [] for t in study.trials)
    assert not list(tmp_path.glob("*.artifacts"))


@pytest.mark.slow  # two aoe-tune processes
def test_a_kill_after_the_log_keeps_no_result_and_the_config_is_measured_again(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    spec = _spec_with_compiler(tmp_path, "g++")
    argv = [str(AOE_TUNE), "--config", str(spec), "--storage", url, "--study-name", "gxx",
            "--n-trials", "2", "--sampler", "random", "--seed", "0", "--no-progress"]
    env = {k: v for k, v in os.environ.items() if not k.startswith("AOE_FAULT")}
    killed = subprocess.run(argv, env={**env, "AOE_FAULT_AT": "log"}, capture_output=True,
                            text=True, timeout=120)
    assert killed.returncode == -signal.SIGKILL, killed.stderr
    done = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == NOTHING_MEASURED, done.stderr  # g++ builds none of them
    study = optuna.load_study(study_name="gxx", storage=url)
    trials = study.get_trials()
    first = trials[0]  # killed between its log and its result
    assert not is_measured(first) and ATTR_FAILURE_KIND not in first.user_attrs
    again = [t for t in trials[1:] if t.params == first.params and is_measured(t)]
    assert len(again) == 1  # measured again, its own log and a whole result
    log_name = f"{again[0].user_attrs[ATTR_FAILURE_KIND]}.log"
    for t in (first, again[0]):  # the killed trial keeps the log it wrote
        assert [m.filename for m in get_all_artifact_meta(t, storage=study._storage)] == [
            log_name]
    assert count_measured(trials) == 2
