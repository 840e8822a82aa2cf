"""Runs that meet on one storage: a refusal removes nothing, runs started together all
join, a duplicate enqueue is measured once, passwords never print, outputs are checked
before the first measurement, and every refusal is one line."""

from __future__ import annotations

import json
import os
import resource
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import optuna
import pytest

from aoe_optuna.backends.npu.simple_gemm.kernel import kernel_source_path
from aoe_optuna.cli.main import main
from aoe_optuna.study.run.objective import TuningObjective, is_measured
from tests.support.pg_server import postgres_server, server_bin
from tests.support.preloaded import ForkedRun

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
KERNEL = str(kernel_source_path())
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")


def _one_line_refusal(capsys: pytest.CaptureFixture[str], code: int) -> str:
    err = capsys.readouterr().err.strip()
    assert code == 2, err
    assert err.startswith("aoe-tune") and "error:" in err and len(err.splitlines()) == 1, err
    return err


def _audit(url: str, name: str) -> dict[str, int]:
    trials = optuna.load_study(study_name=name, storage=url).get_trials()
    measured = [t for t in trials if is_measured(t)]
    configs = Counter(tuple(sorted(t.params.items())) for t in measured)
    return {"measured": len(measured), "duplicates": sum(c - 1 for c in configs.values()),
            "running": sum(t.state == optuna.trial.TrialState.RUNNING for t in trials)}


# ---------------------------------------------------------------- refusals write nothing
@pytest.mark.slow  # two real processes racing on one folder
def test_a_refused_run_never_removes_the_storage_a_healthy_run_opened(tmp_path: Path) -> None:
    (tmp_path / "bad.safetensors").write_bytes(b"not a policy at all")
    db = tmp_path / "aoe.db"
    seen_during_refusal: list[bool] = []
    refused = subprocess.Popen(
        [AOE_TUNE, "--config", QWEN, "--sampler", "reinforce", "--sampler-kwargs",
         '{"policy": "bad.safetensors"}', "--no-progress"],
        cwd=tmp_path, stderr=subprocess.PIPE, text=True)

    def watch() -> None:  # the refused run alone in the folder: it must not create the file
        while refused.poll() is None:
            seen_during_refusal.append(db.exists())
            time.sleep(0.002)

    watcher = threading.Thread(target=watch)
    watcher.start()
    time.sleep(0.5)
    healthy = subprocess.run([AOE_TUNE, "--config", QWEN, "--n-trials", "40", "--sampler",
                              "random", "--no-progress"], cwd=tmp_path, capture_output=True,
                             text=True, timeout=600)
    watcher.join()
    err = refused.stderr.read() if refused.stderr else ""
    assert refused.returncode == 2 and "not a policy file" in err, err
    assert healthy.returncode == 0, healthy.stderr[-2000:]
    assert db.exists(), "the refused run removed the healthy run's storage"
    name = optuna.get_all_study_names(f"sqlite:///{db}")[0]
    assert _audit(f"sqlite:///{db}", name)["measured"] == 40


def test_a_refused_run_does_not_create_the_storage(tmp_path: Path, monkeypatch,
                                                   capsys) -> None:
    """Checked before the storage is opened, not undone after: nothing to remove."""
    monkeypatch.chdir(tmp_path)
    policy_folder = tmp_path / "policies"
    policy_folder.mkdir()
    code = main(["--config", QWEN, "--sampler", "reinforce", "--sampler-kwargs",
                 json.dumps({"policy": str(policy_folder)}), "--no-progress"])
    assert "a folder, not a policy file" in _one_line_refusal(capsys, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["policies"]


def test_resuming_from_a_storage_file_that_does_not_exist_creates_nothing(
        tmp_path: Path, monkeypatch, capsys) -> None:
    monkeypatch.chdir(tmp_path)
    for argv in (["--storage", "sqlite:///missing.db", "--study-name", "x"],
                 ["operators", "--storage", "missing.log", "--study-name", "x"]):
        code = main(argv)
        assert "does not exist" in _one_line_refusal(capsys, code)
    assert list(tmp_path.iterdir()) == []


# ----------------------------------------------------------- runs that start together
def _start_together(url: str, name: str, n: int, cwd: Path) -> list[tuple[int, str]]:
    """``n`` runs started at once, each a process (forked with the modules loaded, so
    they meet the new storage closer together than interpreters still importing)."""
    runs = [ForkedRun(["--config", QWEN, "--storage", url, "--study-name", name,
                       "--n-trials", "12", "--sampler", "random", "--seed", str(i),
                       "--no-progress"], cwd, os.environ) for i in range(n)]
    done = [run.wait(timeout=600) for run in runs]
    return [(d.returncode, d.stdout + d.stderr) for d in done]


def _check_joined(url: str, name: str, outs: list[tuple[int, str]]) -> None:
    for code, out in outs:
        assert code == 0 and "Traceback" not in out, out[-2000:]
    assert _audit(url, name) == {"measured": 12, "duplicates": 0, "running": 0}


@pytest.mark.slow  # 3 processes x 3 rounds
def test_runs_started_together_on_a_new_sqlite_file_all_join(tmp_path: Path) -> None:
    for round_ in range(3):
        url = f"sqlite:///{tmp_path}/fresh{round_}.db"
        _check_joined(url, "together", _start_together(url, "together", 3, tmp_path))


@pytest.mark.slow  # a real PostgreSQL server
@pytest.mark.skipif(server_bin() is None, reason="no PostgreSQL server binaries (Debian's "
                    "postgresql package)")
def test_runs_started_together_on_postgresql_all_join_and_print_no_password(
        tmp_path: Path) -> None:
    with postgres_server() as url:
        secret_url = url.replace("postgres@", "postgres:pw-not-shown@")  # trust auth
        for round_ in range(2):
            name = f"together{round_}"
            outs = _start_together(secret_url, name, 3, tmp_path)
            _check_joined(url, name, outs)
            assert not any("pw-not-shown" in out for _, out in outs)
            study = optuna.load_study(study_name=name, storage=url)
            stored = json.dumps([study.user_attrs,
                                 study._storage.get_study_system_attrs(study._study_id)],
                                default=str)
            assert "pw-not-shown" not in stored  # the dashboard note, the spec, the sampler


def test_an_enqueued_config_held_by_an_earlier_trial_is_not_measured(tmp_path: Path) -> None:
    """Two runs starting a new study both enqueue the baseline; it is measured once."""
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec(QWEN)
    study = optuna.create_study(storage=f"sqlite:///{tmp_path}/s.db", direction="maximize")
    study.enqueue_trial(dict(spec.baseline))
    study.enqueue_trial(dict(spec.baseline))
    first, second = study.ask(), study.ask()
    objective = TuningObjective.from_spec(spec)
    with pytest.raises(optuna.TrialPruned, match=f"trial {first.number} holds"):
        objective(second)
    assert objective(first) > 0  # the earlier trial measures it


# ------------------------------------------------------------------- passwords
def test_an_unreachable_postgresql_url_prints_no_password(capsys) -> None:
    code = main(["--config", QWEN, "--storage",
                 "postgresql+psycopg://u:pw-not-shown@127.0.0.1:9/aoe", "--no-progress"])
    err = _one_line_refusal(capsys, code)
    assert "pw-not-shown" not in err and "u:***@" in err


# ------------------------------------------- outputs checked before the first measurement
def _bad_kb(tmp_path: Path) -> str:
    (tmp_path / "kb.json").write_text('{"format": "something else"}')
    return str(tmp_path / "kb.json")


@pytest.mark.parametrize("extra,expected", [
    (["--op-source", KERNEL, "--output", "/nonexistent/x.cpp"], "folder /nonexistent does not"),
    (["--op-source", KERNEL, "--output", "."], "is a folder"),
    (["--kb", "/nonexistent/kb.json"], "folder /nonexistent does not exist"),
    (["--kb", "BAD_KB"], "not a knowledge base"),
    (["--target", "-5"], "--target: expected a positive"),
    (["--sampler", "tpe", "--sampler-kwargs", '{"n_startup_trials": "x"}'],
     "option 'n_startup_trials': expected an integer"),
    (["--storage", "sqlite:///."], "is a folder; name a database file"),
])
def test_bad_outputs_and_options_are_refused_before_measuring(
        tmp_path: Path, monkeypatch, capsys, extra: list[str], expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    extra = [_bad_kb(tmp_path) if a == "BAD_KB" else a for a in extra]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["--config", QWEN, "--n-trials", "2", "--no-progress", *extra])
    assert expected in _one_line_refusal(capsys, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.parametrize("extra,expected", [
    (["--export-dir", "FILE"], "is not a folder"),
    (["--kb", "BAD_KB"], "not a knowledge base"),
    (["--sampler", "reinforce", "--sampler-kwargs", '{"policy": "FOLDER"}'],
     "a folder, not a policy file"),
])
def test_operators_refuses_bad_outputs_before_the_storage(
        tmp_path: Path, monkeypatch, capsys, extra: list[str], expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "file").write_text("x")
    extra = [{"BAD_KB": _bad_kb(tmp_path), "FILE": "file"}.get(a, a) for a in extra]
    extra = [a.replace("FOLDER", str(tmp_path)) for a in extra]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(["operators", "--config", QWEN, "--n-trials", "2", "--no-progress", *extra])
    assert expected in _one_line_refusal(capsys, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


def test_kb_without_op_source_writes_the_knowledge_base(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--config", QWEN, "--n-trials", "2", "--sampler", "random", "--no-progress",
                 "--kb", "kb.json"]) == 0
    entries = json.loads((tmp_path / "kb.json").read_text())["entries"]
    assert entries and all(e["op"] == "GemmKernel" for e in entries)


# -------------------------------------------------------------- one line, not a traceback
@pytest.mark.parametrize("document", [
    '[',
    '{"format": "aoe-kb", "version": 1, "entries": {}}',
    '{"format": "aoe-kb", "version": 1, "entries": [{"soc": 1}]}',
    "[" * 100_000,
    "BINARY",
])
def test_export_with_a_bad_knowledge_base_is_one_line(tmp_path: Path, monkeypatch, capsys,
                                                      document: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--config", QWEN, "--n-trials", "2", "--sampler", "random",
                 "--no-progress"]) == 0
    name = optuna.get_all_study_names("sqlite:///aoe.db")[0]
    kb = tmp_path / "kb.json"
    if document == "BINARY":
        kb.write_bytes(b"\xff\xfe\x00")
    else:
        kb.write_text(document)
    capsys.readouterr()
    code = main(["export", "--study-name", name, "--kb", str(kb)])
    _one_line_refusal(capsys, code)
    assert not (tmp_path / "optimized_kernel.cpp").exists()


def _spec_with(tmp_path: Path, **changes: object) -> str:
    from aoe_optuna.spec.format import read_document

    doc = read_document(QWEN)
    doc.update(changes)
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(doc))
    return str(path)


@pytest.mark.parametrize("changes,expected", [
    ({"constraints": ["tile_m <= l0a_size % 0"]}, "divides by zero"),
    ({"constraints": ["tile_m <= l0a_size // (2 - 2)"]}, "divides by zero"),
    ({"op_name": "Gemm\n"}, "key 'op_name'"),
    ({"workload": {"hf_config": "DEEP", "phase": "decode", "batch": 1}}, "nested too deeply"),
    ({"workload": {"shapes": "DEEP"}}, "nested too deeply"),
])
def test_spec_inputs_that_crashed_are_one_line(tmp_path: Path, monkeypatch, capsys,
                                               changes: dict, expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text("[" * 50_000 + "]" * 50_000)
    changes = json.loads(json.dumps(changes).replace("DEEP", str(tmp_path / "deep.json")))
    spec = _spec_with(tmp_path, **changes)
    code = main(["--config", spec, "--no-progress"])
    assert expected in _one_line_refusal(capsys, code)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["deep.json", "spec.json"]


def test_a_constraint_whose_divisor_varies_still_compiles() -> None:
    from aoe_optuna.space.constraints import compile_expression

    rule = compile_expression("tile_m % (tile_n - 16) == 0", {"tile_m": None, "tile_n": None})
    import numpy as np

    held = rule.holds({"tile_m": np.array([32, 32]), "tile_n": np.array([16, 32])})
    assert held.tolist() == [False, True]  # tile_n = 16 divides by zero: not held


@pytest.mark.slow  # a real process whose storage writes start failing
def test_a_full_disk_mid_run_is_one_line_and_keeps_what_was_stored(tmp_path: Path) -> None:
    def small_files() -> None:  # writes past 600 kB fail as on a full disk (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (600_000, 600_000))

    url = f"sqlite:///{tmp_path}/full.db"
    run = subprocess.run([AOE_TUNE, "--config", QWEN, "--storage", url, "--n-trials", "400",
                          "--sampler", "random", "--no-progress"], preexec_fn=small_files,
                         capture_output=True, text=True, timeout=600, env=os.environ.copy())
    lines = run.stderr.strip().splitlines()
    assert run.returncode == 2 and "Traceback" not in run.stderr, run.stderr[-2000:]
    assert lines[-1].startswith("aoe-tune: error: storage") and "disk" in lines[-1]
    name = optuna.get_all_study_names(url)[0]
    kept = _audit(url, name)["measured"]
    resumed = subprocess.run([AOE_TUNE, "--storage", url, "--study-name", name, "--n-trials",
                              str(kept + 2), "--no-progress"], capture_output=True, text=True,
                             timeout=600)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    assert _audit(url, name) == {"measured": kept + 2, "duplicates": 0, "running": 0}
