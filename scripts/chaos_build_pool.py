"""Kill a pooled cpu-backend run again and again, then finish it: is anything lost?

    nice .venv/bin/python scripts/chaos_build_pool.py --kills 10 --budget 40

One ``aoe-tune --builders 1`` on a SQLite study of small real cpu GEMMs (gcc
builds, timings on a pinned core) is SIGKILLed with its process group (its
builds and its timing in flight) 1.5-5 s after each start (start-up takes
about 1.5 s), ``--kills`` times; then the same command runs to the budget.
Checks: exactly the budget measured, no config measured twice, nothing left RUNNING, every result
completed before a kill still there. Prints one markdown row.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import optuna
from optuna.trial import TrialState

from aoe_optuna.study.run.objective import count_measured, is_measured

SPACE = {
    "tile_m": [16, 32, 64], "tile_n": [16, 32, 64], "tile_k": [16, 32, 64],
    "pipeline": [0, 1, 2], "l1_prefetch": [0, 1], "output_align": [0, 1],
    "opt_level": ["O1", "O2"], "schedule": ["default", "balanced"],
    "unroll_factor": [0, 4], "layout": ["row_major"], "quantization": [False],
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--budget", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rng = random.Random(args.seed)
    root = Path(tempfile.mkdtemp(prefix="aoe-chaos-pool-"))
    spec = root / "cpu.json"
    spec.write_text(json.dumps({
        "op_name": "GemmKernel", "search_space": SPACE,
        "optimization_objective": "throughput", "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
        "backend": {"name": "cpu", "max_seconds": 0.05, "work_dir": str(root / "builds")}}))
    url = f"sqlite:///{root / 'chaos.db'}"
    aoe_tune = Path(sys.executable).parent / "aoe-tune"
    argv = [str(aoe_tune), "--config", str(spec), "--storage", url, "--study-name", "c",
            "--n-trials", str(args.budget), "--builders", "1", "--sampler", "random",
            "--no-progress"]
    started = time.monotonic()
    kept: dict[int, float] = {}
    lost = 0
    for k in range(args.kills):
        proc = subprocess.Popen([*argv, "--seed", str(k)], stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        time.sleep(rng.uniform(1.5, 5.0))
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        try:
            study = optuna.load_study(study_name="c", storage=url)
        except KeyError:
            continue
        done = {t.number: t.value for t in study.get_trials(states=(TrialState.COMPLETE,))}
        lost += sum(1 for n, v in kept.items() if done.get(n) != v)
        kept = done
    before = count_measured(optuna.load_study(study_name="c", storage=url).get_trials())
    final = subprocess.run([*argv, "--seed", "999"], capture_output=True, text=True)
    study = optuna.load_study(study_name="c", storage=url)
    trials = study.get_trials()
    measured = [t for t in trials if is_measured(t)]
    configs = [json.dumps(t.params, sort_keys=True) for t in measured]
    running = sum(t.state == TrialState.RUNNING for t in trials)
    lost += sum(1 for n, v in kept.items() if trials[n].value != v)
    traceback = "Traceback" in final.stderr
    print("| kills | budget | measured by the killed runs | measured | measured twice "
          "| left RUNNING | results lost | final exit | traceback | wall s |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    print(f"| {args.kills} | {args.budget} | {before} | {count_measured(trials)} "
          f"| {len(configs) - len(set(configs))} | {running} | {lost} | {final.returncode} "
          f"| {'yes' if traceback else 'no'} | {time.monotonic() - started:.0f} |")
    ok = (count_measured(trials) == args.budget and len(set(configs)) == len(configs)
          and not running and not lost and final.returncode == 0 and not traceback)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
