#!/usr/bin/env python
"""How often a test of GP-UCB's prior passes a true and a shuffled prior, on random designs.

For each number of measurements n and each draw, n distinct random configs
of a recorded space that ran, their values as the GP's copula targets, and
the prior's normal scores at them (another recording of the space, or the
same recording's values shuffled over its configs, seeded by the draw). Two
tests, each the fraction of draws it passes:

- evidence: the sampler's own (``_prior_step.evidence_gain`` > 0): the
  prior-mean GP's log posterior over the plain GP's, less 2 log(n);
- LOO: leave-one-out log predictive density of the prior-mean GP (its mean
  coefficients re-estimated without the left-out point, by generalised least
  squares, its kernel hyperparameters as fitted) over the plain GP's (its
  constant re-estimated the same way) > 0.

    python scripts/prior_tests_on_random_designs.py \\
        --space ../shared/spaces/gemm_RTX_3060_laptop.json.gz \\
        --prior-space ../shared/spaces/gemm_RTX_2080_Ti.json.gz --draws 12 --n 5,8,12,20,40
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import numpy as np


def loo_log_density(x: np.ndarray, basis: np.ndarray, y: np.ndarray, lengthscale: np.ndarray,
                    noise: float, scale: float) -> float:
    """Sum over points of log N(y_i; LOO mean, LOO variance), the mean's coefficients on
    ``basis`` columns re-estimated without point i (Dubrule's closed form with the
    projected inverse P = K^-1 - K^-1 H (H^T K^-1 H)^-1 H^T K^-1)."""
    import torch

    from aoe_optuna.samplers.gp_ucb._model import _matern52, _sq_dist

    tx = torch.as_tensor(x, dtype=torch.float64) / torch.as_tensor(lengthscale,
                                                                   dtype=torch.float64)
    k = _matern52(_sq_dist(tx, tx)) * scale
    k.diagonal().fill_(scale + noise + 1e-8)
    kinv = torch.cholesky_inverse(torch.linalg.cholesky(k))
    h = torch.as_tensor(basis, dtype=torch.float64)
    kh = kinv @ h
    p = kinv - kh @ torch.linalg.solve(h.T @ kh, kh.T)
    d = p.diagonal().clamp_min(1e-12)
    e = (p @ torch.as_tensor(y, dtype=torch.float64)) / d
    return float((-0.5 * torch.log(2 * math.pi / d) - 0.5 * e * e * d).sum())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--space", required=True)
    ap.add_argument("--prior-space", required=True)
    ap.add_argument("--draws", type=int, default=12)
    ap.add_argument("--n", default="5,8,12,20,40", help="measurements, comma-separated")
    args = ap.parse_args()
    for option, path in (("--space", args.space), ("--prior-space", args.prior_space)):
        if not Path(path).is_file():
            ap.exit(2, f"prior_tests_on_random_designs: {option} {path}: no such file\n")
    ns = [int(v) for v in args.n.split(",")]

    from aoe_optuna.bench.seed_run import Case, build_case
    from aoe_optuna.samplers.gp_ucb._model import fit_gp
    from aoe_optuna.samplers.gp_ucb._prior_model import fit_prior_gp
    from aoe_optuna.samplers.gp_ucb._prior_scores import PriorScores
    from aoe_optuna.samplers.gp_ucb._prior_step import evidence_gain
    from aoe_optuna.samplers.gp_ucb._targets import targets
    from aoe_optuna.samplers.gp_ucb._tiling_features import GPInputs
    from aoe_optuna.samplers.priors.table import shuffled

    built = build_case(Case.from_path(args.space, prior=args.prior_space))
    space, backend = built.space, built.evaluator.backend
    rows = space.all_feasible()
    values = np.array([_value(backend.measure(space.config(r))) for r in rows])
    rows, values = rows[np.isfinite(values)], values[np.isfinite(values)]
    encode = GPInputs(space, None)
    print("prior n evidence LOO")
    for kind in ("true", "shuffled"):
        for n in ns:
            evidence = loo = 0
            for draw in range(args.draws):
                prior = built.prior if kind == "true" else shuffled(built.prior, seed=draw)
                scores = PriorScores.for_space(prior, space, True, rows, 0)
                pick = np.random.default_rng([draw, n, 7]).choice(rows.shape[0], n,
                                                                  replace=False)
                x, y, f = encode(rows[pick]), targets(values[pick]), scores(rows[pick])
                plain = fit_gp(x, y, None, 0, 100)
                hyper = fit_prior_gp(x, f, y, None, 100)
                evidence += evidence_gain(x, f, y, plain, hyper) > 0
                p = plain.hyper
                ones = np.ones((n, 1))
                plain_loo = loo_log_density(
                    x, ones, y, np.asarray(p["covar_module.raw_lengthscale"], dtype=float),
                    max(float(p["likelihood.noise_covar.raw_noise"][0]), 1e-6), 1.0)
                prior_loo = loo_log_density(x, np.concatenate([ones, f[:, None]], axis=1), y,
                                            hyper.lengthscale, hyper.noise, hyper.outputscale)
                loo += prior_loo > plain_loo
            print(f"{kind} {n} {evidence}/{args.draws} {loo}/{args.draws}", flush=True)
    return 0


def _value(measurement: object) -> float:
    latency = getattr(measurement, "latency_s", None)
    return 1.0 / latency if getattr(measurement, "ok", False) and latency else float("nan")


if __name__ == "__main__":
    raise SystemExit(main())
