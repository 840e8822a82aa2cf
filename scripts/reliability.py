"""Many workers on one study, for real: storages x workers, kill cycles, CPU speed-up.

    python scripts/reliability.py                 # everything (about 10 minutes on 2 cores)
    python scripts/reliability.py --only storages # one part: storages, kills, speedup

Prints markdown tables for docs/RELIABILITY.md. Every run is a real
``aoe-tune`` command line (worker processes, real storages, a private
PostgreSQL server on loopback when the machine has the server binaries).
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import optuna
from optuna.trial import TrialState

from aoe_optuna.study.run.objective import count_measured, is_measured

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: tests.support
from tests.support.pg_server import postgres_server, server_bin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
CPU = ROOT / "studies" / "cpu_gemm.json"
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")


def _tune(args: list[str], timeout: float = 1800) -> tuple[int, str, float]:
    t0 = time.monotonic()
    p = subprocess.run([AOE_TUNE, *args, "--no-progress"], capture_output=True, text=True,
                       timeout=timeout)
    return p.returncode, p.stderr, time.monotonic() - t0


def _audit(storage: object, name: str) -> dict[str, int]:
    trials = optuna.load_study(study_name=name, storage=storage).get_trials()
    measured = [t for t in trials if is_measured(t)]
    configs = Counter(tuple(sorted(t.params.items())) for t in measured)
    return {
        "measured": count_measured(trials),
        "duplicates": sum(c - 1 for c in configs.values()),
        "errors": sum(1 for t in trials if t.state == TrialState.FAIL and is_measured(t)),
        "locked": sum(1 for t in trials
                      if "locked" in str(t.user_attrs.get("failure_reason", ""))),
        "running_left": sum(1 for t in trials if t.state == TrialState.RUNNING),
    }


def storages_table(tmp: Path) -> None:
    print("| storage | workers | sampler | requested | measured | duplicate configs | "
          "failed trials | 'database is locked' | exit codes | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    urls: list[tuple[str, str, object]] = []
    db = tmp / "s.db"
    urls.append(("sqlite", f"sqlite:///{db}", f"sqlite:///{db}"))
    log = tmp / "s.log"
    journal = optuna.storages.JournalStorage(
        optuna.storages.journal.JournalFileBackend(str(log)))
    urls.append(("journal file", str(log), journal))
    pg_ctx = postgres_server() if server_bin() is not None else None
    try:
        if pg_ctx is not None:
            pg = pg_ctx.__enter__()
            urls.append(("postgresql", pg, pg))
        for label, url, storage in urls:
            for workers, sampler, n in ((1, "random", 40), (4, "random", 40), (8, "random", 40),
                                        (4, "gp-ucb", 40)):
                name = f"{label}-{workers}-{sampler}".replace(" ", "_")
                rc, err, wall = _tune(["--config", QWEN, "--storage", url, "--study-name", name,
                                       "--n-trials", str(n), "--n-workers", str(workers),
                                       "--sampler", sampler, "--seed", "0"])
                a = _audit(storage, name)
                print(f"| {label} | {workers} | {sampler} | {n} | {a['measured']} | "
                      f"{a['duplicates']} | {a['errors']} | {a['locked']} | {rc} | {wall:.0f} |",
                      flush=True)
    finally:
        if pg_ctx is not None:
            pg_ctx.__exit__(None, None, None)


def _measured(url: str, name: str) -> int:
    try:
        return count_measured(optuna.load_study(study_name=name, storage=url).get_trials())
    except KeyError:
        return -1


def _wait_for_progress(url: str, name: str, step: int, limit_s: float = 180) -> None:
    """Until ``step`` more measurements are stored than when called (or the limit)."""
    start = _measured(url, name)
    deadline = time.monotonic() + limit_s
    while time.monotonic() < deadline and _measured(url, name) < max(start, 0) + step:
        time.sleep(0.2)


def kill_cycles(tmp: Path, cycles: int = 10, n: int = 60) -> None:
    url = f"sqlite:///{tmp / 'k.db'}"
    args = ["--config", QWEN, "--storage", url, "--study-name", "k", "--n-trials", str(n),
            "--n-workers", "2", "--sampler", "gp-ucb"]
    lost = 0
    killed_running = 0
    before: dict[int, float | None] = {}
    for cycle in range(cycles):
        p = subprocess.Popen([AOE_TUNE, *args, "--seed", str(cycle), "--no-progress"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                             start_new_session=True)
        _wait_for_progress(url, "k", step=3 + cycle % 4)  # into the measurements
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        try:
            trials = optuna.load_study(study_name="k", storage=url).get_trials()
        except KeyError:
            continue
        killed_running += sum(1 for t in trials if t.state == TrialState.RUNNING)
        now = {t.number: t.value for t in trials if t.state == TrialState.COMPLETE}
        lost += sum(1 for k, v in before.items() if now.get(k) != v)
        before = now
    rc, _, wall = _tune([*args, "--seed", "99"])
    a = _audit(url, "k")
    trials = optuna.load_study(study_name="k", storage=url).get_trials()
    retried = sum(1 for t in trials if "failed_trial" in t.system_attrs)
    print("| kill-all cycles | requested | measured at the end | completed trials lost | "
          "trials caught RUNNING by a kill | their configs retried | duplicate configs | "
          "trials left RUNNING | final exit |")
    print("|---|---|---|---|---|---|---|---|---|")
    print(f"| {cycles} | {n} | {a['measured']} | {lost} | {killed_running} | {retried} | "
          f"{a['duplicates']} | {a['running_left']} | {rc} |")


def speedup(tmp: Path, n: int = 16) -> None:
    text = CPU.read_text().replace('"M": 512, "K": 512, "N": 512', '"M": 256, "K": 256, "N": 256')
    spec = tmp / "cpu256.json"
    spec.write_text(text)
    env_cache = tempfile.mkdtemp(prefix="aoe-cache-")
    os.environ["AOE_BUILD_CACHE"] = env_cache
    print("| workers | measurements | wall s | speed-up |")
    print("|---|---|---|---|")
    base = None
    for workers in (1, 2):
        url = f"sqlite:///{tmp / f'cpu{workers}.db'}"
        rc, err, wall = _tune(["--config", str(spec), "--storage", url, "--study-name", "c",
                               "--n-trials", str(n), "--n-workers", str(workers),
                               "--sampler", "random", "--seed", "0"])
        assert rc == 0, err
        base = base or wall
        print(f"| {workers} | {_audit(url, 'c')['measured']} | {wall:.0f} | {base / wall:.2f}x |",
              flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--only", choices=("storages", "kills", "speedup"))
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    with tempfile.TemporaryDirectory(prefix="aoe-rel-") as d:
        tmp = Path(d)
        os.chmod(tmp, 0o755)
        if args.only in (None, "storages"):
            storages_table(tmp)
            print()
        if args.only in (None, "kills"):
            kill_cycles(tmp)
            print()
        if args.only in (None, "speedup"):
            speedup(tmp)
    return 0


if __name__ == "__main__":
    sys.exit(main())
