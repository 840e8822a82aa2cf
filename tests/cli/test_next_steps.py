"""The next steps aoe-tune prints after a run work from another folder, for every shipped study."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import optuna
import pytest
from shipped_specs import spec_param

from aoe_optuna.cli.main import main
from aoe_optuna.study.report.text_fit import join_command

ROOT = Path(__file__).resolve().parents[2]
STUDIES = sorted([*ROOT.glob("studies/*.json"), *ROOT.glob("studies/*.toml")])
# A plain run of the cpu kernel-set spec prints cpu_gemm.json's next steps after minutes
# of timing 256 shapes a trial; the spec is for `aoe-tune kernel-set`, whose run, export
# and dispatch tests/cli/test_kernel_set_cpu.py checks.
PLAIN_RUNS = [s for s in STUDIES if s.name != "cpu_gemm_kernel_set.json"]
BIN = Path(sys.executable).parent


def _printed_steps(out: str) -> list[str]:
    """The commands under the summary's ``next:``, each one line (continuations joined)."""
    steps: list[list[str]] = []
    for line in out.split("\nnext:\n", 1)[1].splitlines():
        if line.startswith("      ") and steps and steps[-1][-1].endswith("\\"):
            steps[-1].append(line)
        elif line.startswith("  ") and not line.startswith("   "):
            steps.append([line])
        else:  # the summary's end
            break
    return [join_command(step) for step in steps]


@pytest.mark.slow  # every shipped study: a run and its export
@pytest.mark.parametrize("spec", [spec_param(s) for s in PLAIN_RUNS])
def test_the_printed_next_step_works_from_another_folder(
    spec: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    run_in, elsewhere = tmp_path / "run", tmp_path / "elsewhere"
    run_in.mkdir()
    elsewhere.mkdir()
    monkeypatch.chdir(run_in)
    capsys.readouterr()
    assert main(["--config", str(spec), "--n-trials", "2", "--sampler", "random", "--seed", "0",
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    export, dashboard = _printed_steps(out)
    assert dashboard.startswith("optuna-dashboard sqlite:////")  # absolute: any folder
    monkeypatch.chdir(elsewhere)
    argv = shlex.split(export)
    if argv[0] == "aoe-tune":
        assert main(argv[1:]) == 0, capsys.readouterr().err
        written = capsys.readouterr().out
        # the export names the study's winner first (certified, or why not), then its files
        assert written.startswith(("winner: ", "wrote ", "kb ")), written
        for path in re.findall(r"^wrote (\S+?):?(?: |$)", written, flags=re.M):
            assert Path(path).is_absolute() and Path(path).is_file()
            assert Path(path).parent == run_in  # beside the study, not in the folder run from
    else:  # a backend's own space: Optuna's CLI shows the best trial
        proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], capture_output=True, text=True,
                              cwd=elsewhere, timeout=120)
        assert proc.returncode == 0, proc.stderr
        assert "params" in proc.stdout
    assert not list(elsewhere.iterdir()), "the next step wrote into the folder it ran from"


def test_the_dashboard_note_repeats_the_export(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("optuna_dashboard")
    from optuna_dashboard._note import get_note_from_system_attrs  # type: ignore[import]

    monkeypatch.chdir(tmp_path)
    spec = ROOT / "studies" / "gemm_4096_catlass_910b2.toml"
    assert main(["--config", str(spec), "--storage", "sqlite:///aoe.db", "--study-name", "c",
                 "--n-trials", "2", "--sampler", "random", "--no-progress"]) == 0
    study = optuna.load_study(study_name="c", storage="sqlite:///aoe.db")
    attrs = study._storage.get_study_system_attrs(study._study_id)
    note = get_note_from_system_attrs(attrs, None)["body"]
    assert f"--storage sqlite:///{tmp_path / 'aoe.db'} --study-name c" in note
    assert f"--catlass-header {tmp_path / 'aoe_catlass_gemm.h'}" in note


@pytest.mark.parametrize(("url", "absolute"), [
    ("sqlite:///aoe.db", "sqlite:///{cwd}/aoe.db"),
    ("sqlite:////data/aoe.db", "sqlite:////data/aoe.db"),
    ("sqlite:///:memory:", "sqlite:///:memory:"),
    ("runs/aoe.log", "{cwd}/runs/aoe.log"),
    ("postgresql://u:***@db/aoe", "postgresql://u:***@db/aoe"),
])
def test_storage_urls_are_made_absolute(url: str, absolute: str, tmp_path: Path,
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    from aoe_optuna.study.report.summary import absolute_storage_url

    monkeypatch.chdir(tmp_path)
    assert absolute_storage_url(url) == absolute.format(cwd=tmp_path)
