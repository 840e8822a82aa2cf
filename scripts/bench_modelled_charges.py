"""Tokens/s of Qwen2.5-7B with its GEMMs tuned by ``aoe-tune operators`` (simulator) and the
rest of the step charged three ways: at the roofline (forward.py without models), with the
simulator's decode attention and vector-core models at their default tilings, and at their
best tilings (``workload.attention`` / ``workload.vector_kernels``).

One operator run per serving point gives the GEMM winners; the step with them is
``tokens / tokens_per_s - fixed_s``, and each charge swaps its own ``fixed_s`` in.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_modelled_charges.py --n-trials 60
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path
from typing import Any

import optuna

from aoe_optuna.operators.scheduler import make_scheduler
from aoe_optuna.operators.tuner import OperatorTuner, TunerOptions
from aoe_optuna.spec.loader import spec_from_dict

POINTS = [("decode", 1, 1024), ("decode", 1, 32768), ("decode", 64, 4096), ("prefill", 1, 4096)]


def workload(phase: str, batch: int, seq_len: int, charge: str) -> dict[str, Any]:
    wl: dict[str, Any] = {"phase": phase, "batch": batch, "seq_len": seq_len}
    if charge != "roofline":
        wl["vector_kernels"] = charge
        if phase == "decode":
            wl["attention"] = charge
    return {"workload": wl, "backend": {"name": "simulator"}}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n-trials", type=int, default=60)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    optuna.logging.set_verbosity(optuna.logging.WARNING)
    print("| phase | batch | seq_len | tokens/s: roofline-charged / modelled default / "
          "modelled best | GEMM ms | attention ms (rf/def/best) | vector ms (rf/def/best) |")
    print("|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for phase, batch, seq_len in POINTS:
            specs = {c: spec_from_dict(workload(phase, batch, seq_len, c))
                     for c in ("roofline", "default", "best")}
            spec = specs["roofline"]
            url = f"sqlite:///{Path(tmp) / f'{phase}{batch}_{seq_len}.db'}"
            storage = optuna.storages.RDBStorage(url)
            options = TunerOptions(budget=args.n_trials, scheduler=make_scheduler("gradient"),
                                   seed=args.seed)
            result = OperatorTuner(storage, url, f"{phase}-b{batch}-s{seq_len}", spec,
                                   options).run()
            tokens = spec.workload.tokens_per_step
            gemm_s = tokens / result.tokens_per_s - spec.workload.fixed_s
            rates = [tokens / (gemm_s + specs[c].workload.fixed_s) for c in specs]
            att = [specs[c].workload.details["attention_s"] * 1e3 for c in specs]
            vec = [specs[c].workload.details["elementwise_s"] * 1e3 for c in specs]
            print(f"| {phase} | {batch} | {seq_len} | "
                  + " / ".join(f"{r:,.1f}" for r in rates) + f" | {gemm_s * 1e3:.2f} | "
                  + " / ".join(f"{a:.2f}" for a in att) + " | "
                  + " / ".join(f"{v:.3f}" for v in vec) + " |", flush=True)


if __name__ == "__main__":
    main()
