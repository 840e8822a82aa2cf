"""16 workers on one PostgreSQL study, directly and through Optuna's gRPC storage proxy.

The way a cluster of hosts shares one study: every worker talks to the
database itself, or all of them talk to one ``run_grpc_proxy_server`` that
holds the database connections. The simulator measures in microseconds, so
the storage is the bottleneck. Prints one Markdown row per way: errors,
duplicate measurements, the budget held exactly, and trials per second.

    .venv/bin/python scripts/load_bench.py [--workers 16] [--n-trials 200]

Needs the PostgreSQL server binaries (initdb, as scripts/setup.sh's CI
installs them) and, for the proxy, ``pip install grpcio protobuf``.
"""

from __future__ import annotations

import argparse
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import optuna
from optuna.trial import TrialState

from aoe_optuna.study.run.objective import count_measured, is_measured
from aoe_optuna.study.storage.opening import open_storage

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: tests.support
from tests.support.pg_server import postgres_server  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"



def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _run(storage: str, name: str, workers: int, n_trials: int) -> dict[str, object]:
    started = time.monotonic()
    proc = subprocess.run(
        [str(AOE_TUNE), "--config", str(SPEC), "--storage", storage, "--study-name", name,
         "--n-trials", str(n_trials), "--n-workers", str(workers), "--sampler", "random",
         "--seed", "0", "--no-progress", "--timeout", "1e12"],  # the count is the budget
        capture_output=True, text=True, timeout=1800,
    )
    wall = time.monotonic() - started
    return {"rc": proc.returncode, "wall_s": wall, "stderr": proc.stderr}


def _audit(pg_url: str, name: str) -> dict[str, object]:
    trials = optuna.load_study(study_name=name, storage=open_storage(pg_url)).get_trials()
    measured = [t for t in trials if is_measured(t)]
    configs = Counter(tuple(sorted(t.params.items())) for t in measured)
    finished = [t for t in trials if t.state.is_finished() and t.datetime_complete]
    first = min(t.datetime_start for t in finished if t.datetime_start)
    last = max(t.datetime_complete for t in finished)
    span = (last - first).total_seconds()
    return {
        "trials": len(finished),
        "measured": count_measured(trials),
        "duplicates": sum(n - 1 for n in configs.values()),
        "failed": sum(1 for t in trials if t.state == TrialState.FAIL),
        "left_running": sum(1 for t in trials if t.state == TrialState.RUNNING),
        "span_s": span,
        "trials_per_s": len(finished) / span,
        "measured_per_s": count_measured(trials) / span,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workers", type=int, default=16)
    ap.add_argument("--n-trials", type=int, default=200)
    args = ap.parse_args()
    rows = []
    with postgres_server() as pg_url:
        run = _run(pg_url, "direct", args.workers, args.n_trials)
        rows.append(("direct", run, _audit(pg_url, "direct")))
        port = _free_port()
        proxy = subprocess.Popen(
            [sys.executable, "-m", "aoe_optuna.study.storage.grpc_proxy", pg_url, str(port)])
        try:
            run = _run(f"grpc://127.0.0.1:{port}", "proxied", args.workers, args.n_trials)
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)
        rows.append(("gRPC proxy", run, _audit(pg_url, "proxied")))
    print("| way | workers | requested | measured | duplicate measurements | failed trials "
          "| left RUNNING | errors (exit code, tracebacks) | trials | trials/s | "
          "measurements/s | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for way, run, a in rows:
        errors = f"{run['rc']}, {str(run['stderr']).count('Traceback')}"
        print(f"| {way} | {args.workers} | {args.n_trials} | {a['measured']} | {a['duplicates']} "
              f"| {a['failed']} | {a['left_running']} | {errors} | {a['trials']} "
              f"| {a['trials_per_s']:.1f} | {a['measured_per_s']:.1f} | {run['wall_s']:.0f} |")
    for way, run, _ in rows:
        if run["rc"] != 0:
            print(f"--- {way} stderr (last lines)\n" + "\n".join(
                str(run["stderr"]).splitlines()[-15:]), file=sys.stderr)
    return 0 if all(r["rc"] == 0 for _, r, _ in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
