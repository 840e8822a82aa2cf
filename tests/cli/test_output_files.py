"""Users' output files: what the final write would refuse is refused before the first
measurement (one line, exit 2, nothing made); a symlink is written through; and a write
that still fails after the measurements (folder or working folder deleted, a full disk)
is one line that says the measurements are stored and the command that writes the files
again, which then works."""

from __future__ import annotations

import json
import os
import resource
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.spec.format import read_document
from aoe_optuna.study.run.objective import is_measured

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
STUDY = "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1"
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")

# aoe-tune in a process of its own whose folder argv[1] is deleted once the measurements
# are stored (the tuner's run returns), before the outputs are written.
DELETE_AFTER_MEASURING = """
import shutil, sys
from aoe_optuna.operators.tuner import OperatorTuner
from aoe_optuna.study.session import StudySession
from aoe_optuna.cli.main import main

def deleting(run):
    def run_then_delete(self, *args, **kwargs):
        result = run(self, *args, **kwargs)
        shutil.rmtree(sys.argv[1])
        return result
    return run_then_delete

if sys.argv[2] == "operators":  # the whole run, not each shape's session
    OperatorTuner.run = deleting(OperatorTuner.run)
else:
    StudySession.run = deleting(StudySession.run)
sys.exit(main(sys.argv[2:]))
"""


def _one_line(err: str, code: int) -> str:
    err = err.strip()
    assert code == 2, err
    assert err.startswith("aoe-tune") and "error:" in err and len(err.splitlines()) == 1, err
    return err


def _special(tmp_path: Path, name: str) -> str:
    """A path of the kind ``name`` names: a FIFO, a link to /dev/full, or as given."""
    if name == "FIFO":
        os.mkfifo(tmp_path / "fifo.cpp")
        return str(tmp_path / "fifo.cpp")
    if name == "LINK_TO_DEV_FULL":
        (tmp_path / "kb.json").symlink_to("/dev/full")
        return str(tmp_path / "kb.json")
    return name


@pytest.mark.parametrize("command,option,path,expected", [
    ("tune", "--kb", "/proc/kb.json", "/proc or /sys"),
    ("tune", "--output", "/proc/k.cpp", "/proc or /sys"),
    ("tune", "--output", "FIFO", "a FIFO, not a regular file"),
    ("tune", "--kb", "LINK_TO_DEV_FULL", "(a link to /dev/full): a character device"),
    ("tune", "--output", "/dev/full", "a character device"),
    ("export", "--header", "FIFO", "a FIFO"),
    ("export", "--kb", "/sys/kb.json", "/proc or /sys"),
    ("export", "--output", "/proc/self/fd/1", "/proc or /sys"),
    ("operators", "--kb", "/proc/kb.json", "/proc or /sys"),
    ("operators", "--export-dir", "/proc/kernels", "/proc or /sys"),
])
def test_what_the_final_write_would_refuse_is_refused_before_measuring(
        tmp_path: Path, monkeypatch, capsys, command: str, option: str, path: str,
        expected: str) -> None:
    monkeypatch.chdir(tmp_path)
    path = _special(tmp_path, path)
    if command == "export":
        (tmp_path / "aoe.db").touch()  # checked before the storage is opened
        argv = ["export", "--study-name", STUDY, option, path]
    else:
        argv = ([] if command == "tune" else ["operators"]) + [
            "--config", QWEN, "--n-trials", "2", "--no-progress", option, path]
    before = sorted(p.name for p in tmp_path.iterdir())
    code = main(argv)
    err = _one_line(capsys.readouterr().err, code)
    assert f"{option}: " in err and expected in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no storage, no output
    assert Path("/dev/full").is_char_device()


def test_symlinked_outputs_are_written_through_and_keep_their_mode(tmp_path: Path,
                                                                   monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    store = tmp_path / "store"
    store.mkdir()
    KnowledgeBase().save(store / "kb.json")
    (store / "kb.json").chmod(0o640)
    Path("kb.json").symlink_to(store / "kb.json")
    Path("kernel.cpp").symlink_to(store / "kernel.cpp")  # dangling: the target is made
    assert main(["--config", QWEN, "--n-trials", "2", "--sampler", "random", "--no-progress",
                 "--kb", "kb.json", "--output", "kernel.cpp"]) == 0
    assert Path("kb.json").is_symlink() and Path("kernel.cpp").is_symlink()
    assert len(KnowledgeBase.load(store / "kb.json")) > 0
    assert (store / "kb.json").stat().st_mode & 0o777 == 0o640
    assert "constexpr uint32_t TILE_M" in (store / "kernel.cpp").read_text()
    assert sorted(p.name for p in store.iterdir()) == ["kb.json", "kernel.cpp"]


def _measured(url: str, name: str) -> int:
    trials = optuna.load_study(study_name=name, storage=url).get_trials()
    return sum(1 for t in trials if is_measured(t))


def _again(err: str) -> list[str]:
    """The command the error line gives to write the files again."""
    marker = "write the files again with: "
    assert marker in err, err
    return shlex.split(err.split(marker, 1)[1])


@pytest.mark.slow  # real aoe-tune processes
@pytest.mark.parametrize("deleted", ["working folder", "output folder"])
def test_a_folder_deleted_after_the_measurements_is_one_line_and_the_export_works_again(
        tmp_path: Path, deleted: str) -> None:
    url = f"sqlite:///{tmp_path}/aoe.db"
    work = tmp_path / "work"
    (work / "out").mkdir(parents=True)
    gone = work if deleted == "working folder" else work / "out"
    run = subprocess.run(
        [sys.executable, "-c", DELETE_AFTER_MEASURING, str(gone), "--config", QWEN,
         "--storage", url, "--n-trials", "3", "--sampler", "random", "--no-progress",
         "--kb", "out/kb.json", "--output", "out/kernel.cpp"],
        cwd=work, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    err = _one_line(run.stderr.splitlines()[-1], run.returncode)
    reason = ("the working folder no longer exists" if deleted == "working folder"
              else "out/kernel.cpp: No such file or directory")
    assert reason in err and f"measurements are stored in study {STUDY} of {url}" in err
    again = _again(err)
    assert again[:2] == ["aoe-tune", "export"] and str(work / "out" / "kb.json") in again
    assert _measured(url, STUDY) == 3

    (work / "out").mkdir(parents=True)
    rerun = subprocess.run([AOE_TUNE, *again[1:]], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert len(KnowledgeBase.load(work / "out" / "kb.json")) > 0
    assert (work / "out" / "kernel.cpp").is_file()
    assert _measured(url, STUDY) == 3  # exported, not measured again


@pytest.mark.slow  # real aoe-tune processes, one with a small file size limit
def test_export_onto_a_full_disk_is_one_line_and_leaves_the_old_file(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/aoe.db"
    assert main(["--config", QWEN, "--storage", url, "--n-trials", "2", "--sampler", "random",
                 "--no-progress"]) == 0
    kernel = tmp_path / "kernel.cpp"
    kernel.write_text("the kernel of yesterday\n")

    def small_files() -> None:  # writes past 4 kB fail as on a full disk (EFBIG)
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (4096, 4096))

    run = subprocess.run([AOE_TUNE, "export", "--storage", url, "--study-name", STUDY,
                          "--output", str(kernel), "--kb", str(tmp_path / "kb.json")],
                         preexec_fn=small_files, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    err = _one_line(run.stderr, run.returncode)
    assert f"{kernel}: File too large" in err and _again(err)[1] == "export"
    assert kernel.read_text() == "the kernel of yesterday\n"
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")) == []


@pytest.mark.slow  # a real operator run
def test_operators_knowledge_base_folder_deleted_after_the_run(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/aoe.db"
    out = tmp_path / "out"
    out.mkdir()
    spec = tmp_path / "spec.json"
    doc = read_document(QWEN)
    doc["workload"] = {"gemm": {"M": 16, "K": 512, "N": 512, "dtype": "fp16"}}
    spec.write_text(json.dumps(doc))
    run = subprocess.run(
        [sys.executable, "-c", DELETE_AFTER_MEASURING, str(out), "operators", "--config",
         str(spec), "--storage", url, "--n-trials", "6", "--sampler", "random",
         "--no-progress", "--kb", str(out / "kb.json")],
        cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "Traceback" not in run.stderr, run.stderr[-3000:]
    err = _one_line(run.stderr.splitlines()[-1], run.returncode)
    assert f"{out}/kb.json: No such file or directory" in err, err
    again = _again(err)
    assert again[:2] == ["aoe-tune", "operators"]
    studies = optuna.get_all_study_names(url)
    before = {name: _measured(url, name) for name in studies}

    out.mkdir()
    rerun = subprocess.run([AOE_TUNE, *again[1:]], capture_output=True, text=True,
                           timeout=300, cwd=tmp_path)
    assert rerun.returncode == 0, rerun.stderr
    assert len(KnowledgeBase.load(out / "kb.json")) == 1
    assert {name: _measured(url, name) for name in studies} == before
