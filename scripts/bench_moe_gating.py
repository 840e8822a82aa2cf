"""The MoE router's gating (softmax + top-k) on the simulator: CANN's host tiling
against the model's exhaustive best, per number of rows (tokens), and the floor.

The model follows the kernel's structure and was fitted to no timing: these are the
model's figures, not checked against a chip.

    .venv/bin/python scripts/bench_moe_gating.py --soc Ascend910B2 --experts 128 --top-k 8 \
        --rows 1 16 256 1024 4096 16384
"""

from __future__ import annotations

import argparse

from aoe_optuna.aicore.vector.moe_gating import (
    best_gating_config,
    default_gating_cost,
    floor_s,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.moe_gating import MoeGating, cann_tiling, gating_space


def _tiling(config: dict) -> str:
    return f"{config['tile_rows']} x {config['col_tile']}, {config['cores']} cores"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B2")
    parser.add_argument("--experts", type=int, default=128)
    parser.add_argument("--top-k", type=int, default=8)
    parser.add_argument("--dtype", default="fp16")
    parser.add_argument("--rows", type=int, nargs="+", default=[1, 16, 256, 1024, 4096, 16384])
    args = parser.parse_args()
    profile = load_profile(args.soc)
    print("| rows | feasible | CANN's tiling (rows x experts per pass) | CANN us "
          "| best tiling | best us | floor us |")
    print("|---|---|---|---|---|---|---|")
    for rows in args.rows:
        p = MoeGating(rows, args.experts, args.top_k, args.dtype)
        cann = cann_tiling(profile, p)
        best, best_cost = best_gating_config(profile, p)
        shown = "the same" if all(best[k] == cann[k] for k in best) else _tiling(best)
        print(f"| {rows:,} | {gating_space(profile, p).n_feasible:,} | {_tiling(cann)} "
              f"| {default_gating_cost(profile, p).total_s * 1e6:.2f} | {shown} "
              f"| {best_cost.total_s * 1e6:.2f} | {floor_s(profile, p) * 1e6:.2f} |")


if __name__ == "__main__":
    main()
