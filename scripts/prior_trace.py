#!/usr/bin/env python
"""What GP-UCB made of its prior at each measurement of one bench run.

Runs one seed of ``aoe-tune bench``'s run on a recorded space with another
recording as the prior (the same in-memory study and ask/tell loop as the
bench: ``bench/seed_run.py``), the prior as given, shuffled over its configs
or off, and prints per measurement its cost, the best so far over the
optimum, and the prior's record the sampler stored with the trial (its
weight in the GP's mean, 0 while the plain GP is used; the residual scale;
the evidence gain over the plain GP, less its price; the rank correlation
with the values measured). It shows when a prior was used and when it was
dropped.

    python scripts/prior_trace.py --space ../shared/spaces/gemm_RTX_3060_laptop.json.gz \\
        --prior-space ../shared/spaces/gemm_RTX_2080_Ti.json.gz --prior shuffled --seed 3
"""

from __future__ import annotations

import argparse
from pathlib import Path

RECORD_KEYS = ("weight", "residual_scale", "evidence_gain", "correlation")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", required=True, help="recorded space (.json.gz) measured")
    ap.add_argument("--prior-space", required=True, help="recorded space used as the prior")
    ap.add_argument("--prior", choices=("on", "shuffled", "off"), default="on")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--budget", type=int, default=100)
    args = ap.parse_args()
    for option, path in (("--space", args.space), ("--prior-space", args.prior_space)):
        if not Path(path).is_file():
            ap.exit(2, f"prior_trace: {option} {path}: no such file\n")

    import numpy as np
    import optuna
    from optuna.trial import TrialState

    from aoe_optuna.attrs import GP_PRIOR_ATTR
    from aoe_optuna.backends.replay.backend import load_recorded
    from aoe_optuna.bench.exhaustive import replay_exhaustive
    from aoe_optuna.bench.seed_run import Case, Task, build_case, open_session
    from aoe_optuna.study.run.objective import MeasurementFailed, suggest_config

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    case = Case.from_path(args.space, prior=args.prior_space)
    built = build_case(case)
    optimum = replay_exhaustive(load_recorded(Path(args.space)), built.space).optimum
    task = Task(case, "gp-ucb", (), args.seed, args.budget, 50 * args.budget, prior=args.prior)
    session = open_session(built, task)
    study, space, objective = session.study, session.space, session.objective()
    costs: list[float] = []
    print("measurement cost best/opt " + " ".join(RECORD_KEYS))
    while len(costs) < args.budget:
        trial = study.ask()
        suggest_config(trial, space)
        try:
            value = objective(trial)
        except optuna.TrialPruned:
            study.tell(trial, state=TrialState.PRUNED)
            continue
        except MeasurementFailed:
            study.tell(trial, state=TrialState.FAIL)
            costs.append(float("nan"))
        else:
            study.tell(trial, value)
            costs.append(1.0 / value)
        record = study.trials[trial.number].system_attrs.get(GP_PRIOR_ATTR) or {}
        best = np.nanmin(costs) if np.isfinite(costs).any() else float("nan")
        fields = " ".join(str(record.get(k, "-")) for k in RECORD_KEYS)
        print(f"{len(costs)} {costs[-1]:.6g} {best / optimum:.4f} {fields}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
