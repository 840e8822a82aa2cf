"""aoe-tune end to end on the simulator with real SQLite/Journal storages."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from optuna.trial import TrialState

from aoe_optuna.cli.main import SUBCOMMANDS, main
from aoe_optuna.spec.stored import SAMPLER_ATTR, SPEC_ATTR
from aoe_optuna.study.run.objective import count_measured

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
AOE = str(ROOT / "studies" / "aoe_config.json")
BIN = Path(sys.executable).parent


def _load(url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=url)


def _tune(*args: str) -> int:
    return main([*args, "--no-progress"])


def test_tune_stores_spec_measures_baseline_first_and_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "q", "--n-trials", "12",
                 "--seed", "1") == 0
    study = _load(url, "q")
    trials = study.get_trials()
    assert count_measured(trials) == 12
    assert study.user_attrs[SPEC_ATTR]["baseline"] == trials[0].params
    assert trials[0].user_attrs["baseline"] is True
    keys = {frozenset(t.constraints) for t in trials if t.state != TrialState.RUNNING}
    assert len(keys) == 1 and "L0A" in next(iter(keys))
    done = [t for t in trials if t.state == TrialState.COMPLETE]
    for t in done:
        assert t.user_attrs["tokens_per_s"] == pytest.approx(t.value)
        assert 0 < t.user_attrs["roofline_fraction"] <= 1
        assert set(t.user_attrs["latency_us"]) == {
            "qkv_proj", "o_proj", "gate_up_proj", "down_proj", "lm_head"}
        assert t.user_attrs["cost_s"] > 0
    for t in trials:
        if t.state == TrialState.PRUNED:
            assert t.user_attrs["violated_rules"] and max(t.constraints.values()) > 0
    # resume from storage and name alone: the spec comes from the study
    assert _tune("--storage", url, "--study-name", "q", "--n-trials", "20") == 0
    assert count_measured(_load(url, "q").get_trials()) == 20
    # a finished budget is not exceeded by a rerun
    assert _tune("--storage", url, "--study-name", "q", "--n-trials", "20") == 0
    assert count_measured(_load(url, "q").get_trials()) == 20


@pytest.mark.slow  # two GP-UCB runs, ~8 s of CPU
def test_resume_without_sampler_flags_continues_with_the_studys_sampler(
    tmp_path: Path, capsys
) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    chosen = ["--sampler", "reinforce", "--sampler-kwargs", '{"local": 0.5}', "--seed", "4"]
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "straight",
                 "--n-trials", "20", *chosen) == 0
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "q", "--n-trials", "12",
                 *chosen) == 0
    assert _load(url, "q").user_attrs[SAMPLER_ATTR] == {
        "name": "reinforce", "kwargs": {"local": 0.5}, "seed": 4}
    capsys.readouterr()
    assert _tune("--storage", url, "--study-name", "q", "--n-trials", "20") == 0
    assert "sampler reinforce (the study's own)" in capsys.readouterr().err
    # the same sampler, options and seed: the resumed study is the straight one, trial for trial
    assert ([t.params for t in _load(url, "q").trials]
            == [t.params for t in _load(url, "straight").trials])
    # options alone, with the spec again, go to the study's own sampler (gp-ucb has no `local`)
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "q", "--n-trials", "20",
                 "--sampler-kwargs", '{"local": 0.8}') == 0
    assert _load(url, "q").user_attrs[SAMPLER_ATTR]["kwargs"] == {"local": 0.8}
    # a sampler named on the command line wins, and is what the next resume takes
    assert _tune("--storage", url, "--study-name", "q", "--n-trials", "22",
                 "--sampler", "random") == 0
    stored = _load(url, "q").user_attrs[SAMPLER_ATTR]
    assert stored["name"] == "random" and stored["kwargs"] == {}
    assert isinstance(stored["seed"], int)  # none given: the seed drawn is recorded
    # a stored sampler this aoe-tune does not have: one line, exit 2, nothing measured
    _load(url, "q").set_user_attr(SAMPLER_ATTR, {"name": "gone", "kwargs": {}, "seed": None})
    capsys.readouterr()
    assert _tune("--storage", url, "--study-name", "q", "--n-trials", "30") == 2
    err = capsys.readouterr().err.strip()
    assert "ran with sampler 'gone'" in err and "--sampler" in err and "\n" not in err
    assert count_measured(_load(url, "q").get_trials()) == 22


def test_study_made_by_optuna_create_study_is_adopted(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    subprocess.run(
        [str(BIN / "optuna"), "create-study", "--storage", url, "--study-name", "qwen-decode",
         "--direction", "maximize"], check=True, capture_output=True,
    )
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "qwen-decode",
                 "--n-trials", "5", "--sampler", "random", "--seed", "3") == 0
    study = _load(url, "qwen-decode")
    assert count_measured(study.get_trials()) == 5
    assert study.user_attrs[SPEC_ATTR]["op_name"] == "GemmKernel"
    assert study.metric_names == ["tokens/s"]  # the dashboard's axis, as for a study of ours


def test_minimize_study_and_different_spec_are_refused(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    optuna.create_study(storage=url, study_name="mini", direction="minimize")
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "mini") == 2
    err = capsys.readouterr().err
    assert "maximize" in err and len(err.strip().splitlines()) == 1
    assert _tune("--config", QWEN, "--storage", url, "--study-name", "s", "--n-trials", "3") == 0
    n = len(_load(url, "s").get_trials())
    capsys.readouterr()
    assert _tune("--config", AOE, "--storage", url, "--study-name", "s", "--n-trials", "5") == 2
    err = capsys.readouterr().err
    assert "different spec" in err and len(err.strip().splitlines()) == 1
    assert len(_load(url, "s").get_trials()) == n


def test_journal_storage_and_default_study_name(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert _tune("--config", AOE, "--storage", "aoe.log", "--n-trials", "4",
                 "--sampler", "random", "--seed", "0") == 0
    storage = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend("aoe.log"))
    names = [s.study_name for s in optuna.get_all_study_summaries(storage)]
    assert names == ["GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1"]


BAD_COMMAND_LINES = [
    (["--n-trials", "5"], "--config"),
    (["--config", "missing.json"], "missing.json"),
    (["--config", QWEN, "--sampler", "nope"], "sampler"),
    (["--config", QWEN, "--sampler-kwargs", "{bad"], "--sampler-kwargs"),
    (["--config", QWEN, "--sampler-kwargs", "[1]"], "--sampler-kwargs"),
    (["--config", QWEN, "--sampler", "tpe", "--sampler-kwargs", '{"nonsense": 1}'],
     "--sampler-kwargs"),
    (["--config", QWEN, "--sampler-kwargs", '{"search": {"local_patiense": 5}}'],
     "search: unknown settings ['local_patiense']"),
    (["--config", QWEN, "--sampler-kwargs", '{"model": {"refit_every": "often"}}'],
     "model.refit_every: expected an integer or null, got 'often'"),
    (["--config", QWEN, "--sampler-kwargs", '{"failures": {"model": "never"}}'],
     "failures.model: expected one of"),
    (["--config", QWEN, "--sampler-kwargs", '{"use_feasibility_model": false}'],
     "use_feasibility_model"),
    (["--config", QWEN, "--n-trials", "0"], "--n-trials"),
    (["--config", QWEN, "--n-trials", "ten"], "--n-trials"),
    (["--config", QWEN, "--timeout", "-5"], "--timeout"),
    (["--config", QWEN, "--builders", "-1"], "--builders: expected 0 (no build pool)"),
    (["--config", QWEN, "--op-source", "x.cpp"], "--output"),
    (["--config", QWEN, "--op-source", "nofile.cpp", "--output", "o.cpp"], "--op-source"),
    (["--config", QWEN, "--bogus"], "--bogus"),
    (["--config", QWEN, "--storage", "redis-ish"], "storage"),
    (["--config", QWEN, "--storage", "sqlite:////nonexistent-dir/x.db"], "does not exist"),
    (["--study-name", "nothing-here"], "does not exist"),
    (["--config", QWEN, "--kb-replace"], "--kb-replace: give --kb too"),
]


@pytest.mark.parametrize("args,needle", BAD_COMMAND_LINES)
def test_bad_command_lines_fail_in_one_line_and_write_nothing(
    tmp_path: Path, monkeypatch, capsys, args: list[str], needle: str
) -> None:
    monkeypatch.chdir(tmp_path)
    storage = [] if "--storage" in args else ["--storage", f"sqlite:///{tmp_path / 'aoe.db'}"]
    assert main([*args, *storage, "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith("aoe-tune: error:") and needle in err
    assert "Traceback" not in err
    assert not (tmp_path / "aoe.db").exists()


@pytest.mark.parametrize("argv", [["bogus"], ["bogus", "--help"], ["tunee", "--config", QWEN]])
def test_an_unknown_command_is_refused_in_one_line(
        tmp_path: Path, monkeypatch, capsys, argv: list[str]) -> None:
    """Not the main help and exit 0: the first word names no command, and the tuning
    command takes options only."""
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    out, err = capsys.readouterr()
    assert out == "" and len(err.strip().splitlines()) == 1, err
    assert err.startswith(f"aoe-tune: error: unknown command {argv[0]!r}: expected one of "
                          f"{', '.join(SUBCOMMANDS)}")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.slow  # an aoe-tune process
def test_an_unknown_command_with_help_exits_2_as_a_process(tmp_path: Path) -> None:
    run = subprocess.run([str(BIN / "aoe-tune"), "bogus", "--help"], cwd=tmp_path,
                         capture_output=True, text=True, timeout=120)
    assert (run.returncode, run.stdout) == (2, "")
    assert run.stderr.startswith("aoe-tune: error: unknown command 'bogus'")
    assert len(run.stderr.splitlines()) == 1


def test_bad_spec_writes_nothing(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "bad.json"
    spec.write_text('{"search_space": {"tile_m": []}}')
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert _tune("--config", str(spec), "--storage", url) == 2
    err = capsys.readouterr().err
    assert "search_space.tile_m" in err and str(spec) in err
    assert not (tmp_path / "aoe.db").exists()


def test_short_form_tunes_then_writes_kernel_and_kb(tmp_path: Path, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    out = tmp_path / "optimized_kernel.cpp"
    assert _tune("--config", AOE, "--output", str(out),
                 "--kb", "kb.json", "--n-trials", "8", "--seed", "0") == 0
    assert (tmp_path / "aoe.db").exists()
    study = _load("sqlite:///aoe.db", "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1")
    best = study.best_trial.params
    text = out.read_text()
    assert f"TILE_M = {best['tile_m']}" in text or f"tile_m = {best['tile_m']}" in text
    kb = json.loads((tmp_path / "kb.json").read_text())
    assert kb  # one entry per distinct GEMM shape of the workload
    # export again from storage alone, with a C header
    assert main(["export", "--storage", "sqlite:///aoe.db", "--study-name",
                 study.study_name, "--output", "again.cpp",
                 "--kb", "kb.json", "--header", "kb.h"]) == 0
    assert (tmp_path / "again.cpp").read_text().split("\n", 40)[-1] == text.split("\n", 40)[-1]
    assert (tmp_path / "kb.h").exists()


def test_export_errors_are_one_line(tmp_path: Path, capsys) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["export", "--storage", url, "--study-name", "x"]) == 2
    assert len(capsys.readouterr().err.strip().splitlines()) == 1
    src = tmp_path / "k.cpp"
    src.write_text("constexpr int TILE_M = 64;\n")  # no tile_k / tile_n declarations
    assert _tune("--config", AOE, "--storage", url, "--study-name", "s", "--n-trials", "3",
                 "--op-source", str(src), "--output", str(tmp_path / "o.cpp")) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "tile_k" in err


def test_aoe_optuna_bridge_registers_our_samplers(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert _tune("--config", AOE, "--storage", url, "--study-name", "s", "--n-trials", "3",
                 "--sampler", "random", "--seed", "0") == 0
    proc = subprocess.run(
        [str(BIN / "aoe-optuna"), "ask", "--storage", url, "--study-name", "s",
         "--sampler", "RandomSampler"], capture_output=True, text=True, timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    from aoe_optuna.cli.optuna_cli import register_samplers

    registered = register_samplers()
    for name in registered:
        assert getattr(optuna.samplers, name).__name__ == name


def test_aoe_optuna_ask_with_our_gp_ucb_sampler_proposes_a_feasible_config(
    tmp_path: Path,
) -> None:
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert _tune("--config", AOE, "--storage", url, "--study-name", "s", "--n-trials", "4",
                 "--sampler", "random", "--seed", "0") == 0
    proc = subprocess.run(
        [str(BIN / "aoe-optuna"), "ask", "--storage", url, "--study-name", "s",
         "--sampler", "GPUCBSampler", "--sampler-kwargs", '{"seed": 0}'],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr
    params = json.loads(proc.stdout)["params"]
    study = _load(url, "s")
    from aoe_optuna.spec.stored import space_from_study

    space = space_from_study(study)
    assert space is not None and space.is_feasible(space.index(params)[None, :])[0]
    measured = {tuple(sorted(t.params.items())) for t in study.get_trials() if t.params
                and t.number != json.loads(proc.stdout)["number"]}
    assert tuple(sorted(params.items())) not in measured
