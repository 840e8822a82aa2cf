"""Every example of every ``aoe-tune ... --help`` runs, in the help's order, as a user
would type it in a folder of their own.

The examples are run as written, ``aoe-tune``'s in the test's process (its ``main``, the
exit status and output a process of it gives, :mod:`tests.support.in_process`; the other
programs as processes), but for what only makes them long: budgets, seeds and
training steps are scaled down (:func:`scaled`), and absolute /tmp paths land in the
test's folder. What an example needs from outside is made the way a user makes it: a
placeholder (``SPEC``, ``NAME``, a PostgreSQL URL) is a shipped spec, the study the
examples before made, and a throwaway PostgreSQL server (skipped, with the reason, where
none is installed); the bench runs the analyses read are the bench examples' own
output; the second version of the code a comparison reads is the same bench run again.
"""

from __future__ import annotations

import fcntl
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main
from tests.cli.test_help_examples import HELPS, _examples
from tests.support.in_process import aoe_tune_here
from tests.support.pg_server import postgres_server, server_bin

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
# examples whose exit status 1 the help documents (doctor: "1 when something is missing")
MAY_EXIT_1 = re.compile(r"^aoe-tune doctor(?! --dry-run)")
# examples whose refusal (exit 2, one line, nothing written) the help documents: calibrate
# on torch_npu's figures, which the shipped model already meets within their scatter
REFUSED = re.compile(r"^aoe-tune calibrate .*torch_npu_910b2\.csv")


def _help_examples(command: list[str]) -> list[str]:
    import contextlib
    import io

    out = io.StringIO()
    old = os.environ.get("COLUMNS")
    os.environ["COLUMNS"] = "1000"
    try:
        with contextlib.redirect_stdout(out), contextlib.suppress(SystemExit):
            main([*command, "--help"])
    finally:
        os.environ.pop("COLUMNS") if old is None else os.environ.update(COLUMNS=old)
    return _examples(out.getvalue())


def scaled(argv: list[str], folder: Path) -> list[str]:
    """``argv`` with budgets, seeds and steps made small, /tmp paths under ``folder``."""
    out = list(argv)
    for i in range(1, len(out)):
        option, value = out[i - 1], out[i]
        if option == "--n-trials":
            out[i] = "12" if "operators" in out else "3"
        elif option in ("--budget", "--budgets"):
            out[i] = "10" if "diagnose" in out else "4"  # diagnose takes 10 at least
        elif option == "--steps":
            out[i] = "2"
        elif option == "--seeds":
            lo = value.split("-")[0]
            out[i] = f"{lo}-{int(lo) + 1}" if "-" in value else "2"
        elif option == "--suite" and value == "full":
            out[i] = "short"
    tuning = len(out) > 1 and (out[1].startswith("--") or out[1] == "operators")
    if tuning and "--n-trials" not in out and "--follow" not in out:
        out += ["--n-trials", "12" if "operators" in out else "3"]
    words: list[str] = []
    for a in out:
        if a.startswith("/tmp/"):
            a = str(folder) + a
        elif a.startswith("~/"):  # the shell's expansion, HOME being the folder
            a = str(folder / a[2:])
        words += sorted(str(p.relative_to(folder)) for p in folder.glob(a)) if "*" in a \
            else [a]  # the shell's glob, in the folder
    return words


@pytest.fixture(scope="module")
def postgres_url() -> Iterator[str | None]:
    if server_bin() is None:
        yield None
        return
    with postgres_server() as url:
        yield url


def _placeholders(argv: list[str], postgres: str | None, made: dict[str, str]) -> list[str]:
    out = []
    for a in argv:
        if a == "SPEC":
            a = "studies/qwen25_7b_decode_catlass_910b2.json"
        elif a.startswith("postgresql://"):
            if postgres is None:
                pytest.skip("no PostgreSQL server installed (postgres, initdb)")
            a = postgres
        elif a == "NAME":
            a = made["operators"]
        out.append(a)
    return out


def _run(argv: list[str], folder: Path) -> subprocess.CompletedProcess[str]:
    home = {"HOME": str(folder)}  # ~/catlass and the caches in the folder
    if argv[0] == "aoe-tune":
        return aoe_tune_here(argv[1:], folder, home)
    return subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=folder,
                          env={**os.environ, **home}, capture_output=True, text=True,
                          timeout=600)


def _prepare(command: list[str], folder: Path, postgres: str | None,
             made: dict[str, str]) -> None:
    """What the examples of ``command`` read and a user would have made first."""
    if command == ["export"]:  # the study the tune help's examples make
        proc = _run(["aoe-tune", "--config", "studies/qwen25_7b_decode_910b2.json", "--storage",
                     "sqlite:///aoe.db", "--study-name", "qwen-decode", "--n-trials", "3"],
                    folder)
        assert proc.returncode == 0, proc.stderr[-2000:]
    if command == ["operators"] and postgres is not None:
        spec = "studies/qwen25_7b_decode_catlass_910b2.json"
        proc = _run(["aoe-tune", "operators", "--config", spec, "--storage", postgres,
                     "--n-trials", "12"], folder)
        assert proc.returncode == 0, proc.stderr[-2000:]
        made["operators"] = "CatlassDecodeGemm-Ascend910B2-qwen2.5-7b-decode-b1-operators"


@pytest.fixture(scope="module")
def bench_runs(tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    """The /tmp/w folder the bench help's examples fill, which the analyses read; the
    second version of the code a comparison reads is the same runs again. Made once per
    test run: the pytest-xdist workers share it (the first one makes it, under a lock)."""
    base = tmp_path_factory.getbasetemp()
    shared = base if worker_id == "master" else base.parent  # this run's, not a later one's
    folder = shared / "bench-runs"
    with open(shared / "bench-runs.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if not (folder / "made").exists():
            shutil.rmtree(folder, ignore_errors=True)  # what a failed first try left
            folder.mkdir()
            (folder / "studies").symlink_to(ROOT / "studies")
            for example in _help_examples(["bench"]):
                proc = _run(scaled(shlex.split(example), folder), folder)
                assert proc.returncode == 0, f"{example}: {proc.stderr[-2000:]}"
            old, new = folder / "tmp" / "w" / "old", folder / "tmp" / "w" / "new"
            old.mkdir(parents=True, exist_ok=True)
            for name in ("runs.jsonl", "results.json"):
                (old / name).write_bytes((new / name).read_bytes())
            (folder / "made").touch()
    return folder / "tmp" / "w"


@pytest.mark.slow  # most examples a short study
@pytest.mark.parametrize("command", [*HELPS, ["bench", "guard"]],
                         ids=lambda c: " ".join(c) or "tune")
def test_every_help_example_runs(command: list[str], tmp_path: Path, postgres_url: str | None,
                                 request: pytest.FixtureRequest) -> None:
    examples = _help_examples(command)
    if command == ["bench"]:  # the bench examples are the runs the analyses read: made once
        runs = request.getfixturevalue("bench_runs")
        assert examples and (runs / "new" / "results.json").is_file()
        return
    if command == ["bench", "guard"]:
        pytest.skip("bench guard's examples replay hours of runs on the recorded spaces; "
                    "tests/bench/test_guard.py runs its short suite")
    (tmp_path / "studies").symlink_to(ROOT / "studies")
    if any("--runs" in e or "--a-runs" in e for e in examples):
        (tmp_path / "tmp").mkdir()
        (tmp_path / "tmp" / "w").symlink_to(request.getfixturevalue("bench_runs"))
    made: dict[str, str] = {}
    _prepare(command, tmp_path, postgres_url, made)
    for example in examples:
        argv = _placeholders(scaled(shlex.split(example), tmp_path), postgres_url, made)
        proc = _run(argv, tmp_path)
        if REFUSED.match(example):
            out = tmp_path / argv[argv.index("--out") + 1]
            assert proc.returncode == 2 and "calibration refused" in proc.stderr, proc.stderr
            assert proc.stderr.count("\n") == 1 and not out.exists()
            continue
        allowed = (0, 1) if MAY_EXIT_1.match(example) else (0,)
        assert proc.returncode in allowed, (
            f"`{example}` (in aoe-tune {' '.join(command)} --help) exited {proc.returncode}:\n"
            f"{proc.stderr[-3000:]}")


def test_scaling_keeps_the_example_and_shrinks_its_cost(tmp_path: Path) -> None:
    argv = shlex.split("aoe-tune bench compare --runs /tmp/w/x --budget 100 --seeds 80-119")
    assert scaled(argv, tmp_path) == ["aoe-tune", "bench", "compare", "--runs",
                                      f"{tmp_path}/tmp/w/x", "--budget", "4", "--seeds", "80-81"]
    assert scaled(["aoe-tune", "--n-trials", "100"], tmp_path)[-1] == "3"
    assert scaled(["aoe-tune", "--config", "x.json"], tmp_path)[-2:] == ["--n-trials", "3"]
    assert scaled(["aoe-tune", "doctor", "--catlass", "~/catlass"], tmp_path)[-1] == \
        str(tmp_path / "catlass")
    (tmp_path / "a.json").write_text("{}")
    assert scaled(["aoe-tune", "describe", "*.json"], tmp_path) == [
        "aoe-tune", "describe", "a.json"]
