"""The fault matrix of docs/RELIABILITY.md: a SIGKILL at every write point x storage.

Runs the same chains as ``tests/study/test_fault_matrix.py`` (each run of
``aoe-tune`` kills itself at the next point, a last run finishes the study)
and prints, per point and storage, what the killed trial held and how it
ended, then the checks per storage.

    .venv/bin/python scripts/fault_matrix.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from aoe_optuna.study.run.objective import count_measured, is_measured  # noqa: E402
from tests.study.test_fault_matrix import (  # noqa: E402
    N_MEASUREMENTS,
    POINTS,
    _check,
    _run_matrix,
    describe,
)
from tests.support.pg_server import postgres_server  # noqa: E402


def main() -> int:
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp, postgres_server() as pg_url, \
            ThreadPoolExecutor(3) as pool:
        urls = {"SQLite": f"sqlite:///{tmp}/fm.db", "Journal file": f"{tmp}/fm.log",
                "PostgreSQL": pg_url}
        runs = {name: pool.submit(_run_matrix, url) for name, url in urls.items()}
        results = {name: run.result() for name, run in runs.items()}
    wall = time.monotonic() - started
    names = list(results)
    table = {name: describe(r) for name, r in results.items()}
    print("| kill after | " + " | ".join(names) + " |")
    print("|---" * (len(names) + 1) + "|")
    for point, _ in POINTS:
        print(f"| {point} | " + " | ".join(table[n][point] for n in names) + " |")
    ok = True
    for name, r in results.items():
        trials = r["trials"]
        configs = [tuple(sorted(t.params.items())) for t in trials if is_measured(t)]
        try:
            _check(r)
            verdict = "all checks pass"
        except AssertionError as exc:
            ok, verdict = False, f"FAILED: {exc}"
        print(f"\n{name}: {len(POINTS)} killed runs + 1 resume; measured "
              f"{count_measured(trials)} of {N_MEASUREMENTS}, duplicate configs "
              f"{len(configs) - len(set(configs))}; {verdict}")
    print(f"\nwall {wall:.0f} s")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
