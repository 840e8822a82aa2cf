"""Calibrate and benchmark the Ascend simulator; prints the tables docs/SIMULATOR.md quotes.

Usage: python scripts/calibrate_simulator.py [--soc Ascend910B2] [--repeats 5] [--fit]
       [--validate]

1. the constants fitted to msKPP's single-core tables (MMAD, data movers);
2. with --fit: the streaming and head constants refitted (least squares on
   log time) to the published 910B timings, next to the values in use;
   with --validate: the error per source in sample and left out of the fit
   (leave-one-source-out), and every published sweep's order in the model;
3. the calibration table: every published timing, simulated;
4. where Huawei's recommended block (128, 256, 64, double buffered) ranks;
5. the wall time of evaluating the whole 49,152-point seed space for one GEMM;
6. the Qwen2.5-7B decode landscape: optimum, roofline, configs within 1% / 5%.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.aicore.pipes import cube, transfer
from aoe_optuna.calibration import leave_one_source_out, residuals
from aoe_optuna.calibration.published_gemm import BEYOND_THE_MODEL, PUBLISHED
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm
from aoe_optuna.workload.models import model_workload

TILES = list(range(16, 257, 16))
RECOMMENDED = {"tile_m": 128, "tile_k": 64, "tile_n": 256, "pipeline": 2}


def seed_space(profile: SocProfile, dtype: str = "fp16") -> SearchSpace:
    """The issue's seed space: tiles 16..256 step 16, pipeline, l1_prefetch, output_align."""
    params = [Param.known("tile_m", TILES), Param.known("tile_k", TILES),
              Param.known("tile_n", TILES), Param.known("pipeline", [0, 1, 2]),
              Param.known("l1_prefetch", [0, 1]), Param.known("output_align", [0, 1])]
    return SearchSpace(params, hardware_rules(profile, dtype))


def all_rows(space: SearchSpace) -> np.ndarray:
    return np.stack(np.unravel_index(np.arange(space.size), space.shape), axis=1)


def print_fits(profile: SocProfile) -> None:
    print("## Constants fitted to msKPP single-core tables")
    for table in ("MMAD_910B1", "MMAD_910B3"):
        slope, startup = cube.fit_mmad(table)
        print(f"{table}: cycles = {slope:.4f} * fractals + {startup:.2f}")
    print(f"MMAD start-up used for {profile.soc}: {cube.mmad_startup_cycles(profile.soc):.2f}"
          " cycles")
    clock = profile.clock_hz
    for name in ("gm_to_l1", "l1_to_l0a", "l1_to_l0b", "l0c_to_gm"):
        fit = getattr(transfer, name)()
        print(f"{name}: start-up {fit.startup_s * 1e9:.2f} ns ({fit.startup_s * clock:.1f} cycles),"
              f" {fit.bytes_per_s / 1e9:.1f} GB/s ({fit.bytes_per_s / clock:.1f} B/cycle)")
    print()


def fit() -> None:
    values = leave_one_source_out.fit(PUBLISHED)
    print("## Streaming and head constants refitted to the published timings")
    print("| constant | fitted | in use |")
    print("|---|---|---|")
    for (_, name, _, unit), new, old in zip(leave_one_source_out.FITTED, values,
                                            leave_one_source_out.in_use(), strict=True):
        print(f"| {name} | {new:.2f} {unit} | {old:.2f} {unit} |")
    print()


def _error_row(e: leave_one_source_out.SourceError) -> str:
    return (f"| {e.source} | {e.figures} | {100 * e.median_error:.1f}% | "
            f"{100 * e.max_error:.1f}% | {e.within_10} | {e.median_ratio:.2f} |")


def validate() -> None:
    """In-sample and leave-one-source-out errors per source, and every sweep's order."""
    header = ("| source | figures | median abs(ratio - 1) | worst | within 10% | median ratio |\n"
              "|---|---|---|---|---|---|")
    fitted = leave_one_source_out.fit(PUBLISHED)
    print("## In-sample: constants fitted to every source, per source")
    print(header)
    for e in leave_one_source_out.in_sample(fitted):
        print(_error_row(e))
    with leave_one_source_out.constants(fitted):
        everything = residuals.summary(residuals.table())
    print(f"all {len(PUBLISHED)}: median {100 * everything['median_error']:.1f}%, ranking pairs "
          f"kept {everything['pairs_kept']} of {everything['pairs']}")
    print()
    print("## Leave-one-source-out: each source with constants fitted to the others")
    print(header)
    held: list[residuals.Row] = []
    for e, rows in leave_one_source_out.leave_one_source_out():
        print(_error_row(e))
        held += rows
    print(f"all {len(held)}, each left out with its source: median "
          f"{100 * leave_one_source_out.pooled_median(held):.1f}%")
    print()
    print("## Published sweeps: configs of one shape from one source, in the model's order")
    print("| sweep | configs | Spearman | model's rank of the published best |")
    print("|---|---|---|---|")
    for s in leave_one_source_out.sweeps(residuals.table()):
        print(f"| {s.label} | {s.size} | {s.spearman:.2f} | {s.best_rank} of {s.size} |")
    print()


def calibrate() -> None:
    rows = residuals.table()
    print("## Calibration: published 910B timings and the simulator")
    print("| figure | SoC | M, N, K, dtype | config | published us | simulated us | ratio |")
    print("|---|---|---|---|---|---|---|")
    for r in rows:
        f = r.figure
        cfg = ", ".join(f"{k}={v}" for k, v in r.config.items()
                        if k not in ("pipeline", "l1_prefetch"))
        label = cfg if f.config is not None else f"best of the library space: {cfg}"
        print(f"| {f.name} | {f.soc} | {f.m}, {f.n}, {f.k}, {f.dtype} | {label} "
              f"| {f.published_us:.1f} | {r.simulated_us:.1f} | {r.ratio:.2f} |")
    s = residuals.summary(rows)
    print(f"median |ratio - 1| {100 * s['median_error']:.1f}%, worst "
          f"{100 * s['max_error']:.1f}%, {s['within_10']} of {s['figures']} within 10%; "
          f"ranking pairs kept: {s['pairs_kept']} of {s['pairs']}")
    print("sources:", "; ".join(sorted({r.figure.source for r in rows})))
    for figure, why in BEYOND_THE_MODEL:
        r = residuals.simulate(figure)
        print(f"not fitted: {figure.name} ({figure.soc}, {figure.m}, {figure.n}, {figure.k}): "
              f"published {figure.published_us:.1f} us, simulated {r.simulated_us:.1f} us "
              f"(ratio {r.ratio:.2f}): {why}")
    print()


def recommended_rank(profile: SocProfile) -> None:
    space = seed_space(profile)
    feasible = space.all_feasible()
    sim = GemmModel(profile)
    gemm = Gemm(4096, 4096, 4096)
    lat = sim.latency(space.columns(feasible), gemm)
    print("## Huawei's recommended block (128, 256, 64), double buffered, 4096^3")
    for pf in (0, 1):
        for al in (0, 1):
            cfg = {**RECOMMENDED, "l1_prefetch": pf, "output_align": al}
            mine = float(sim.latency(space.columns(space.index(cfg)[None, :]), gemm)[0])
            better = float(np.mean(lat < mine))
            print(f"l1_prefetch={pf} output_align={al}: {gemm.flops / mine / 1e12:.1f} TFLOPS, "
                  f"{100 * better:.2f}% of the {len(lat):,} feasible configs are faster")
    print()


def timing(profile: SocProfile, repeats: int) -> None:
    space = seed_space(profile)
    rows = all_rows(space)
    sim = GemmModel(profile)
    gemm = Gemm(4096, 4096, 4096)
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        cols = space.columns(rows)
        sim.latency(cols, gemm)
        times.append(time.perf_counter() - t0)
    print(f"## Evaluating all {len(rows):,} configs of the seed space (one GEMM, columns included)")
    print(f"median {np.median(times):.3f} s, min {np.min(times):.3f} s over {repeats} runs; "
          f"{platform.processor() or platform.machine()}, Python {platform.python_version()}")
    print()


def decode_landscape(profile: SocProfile) -> None:
    space = seed_space(profile)
    feasible = space.all_feasible()
    cols = space.columns(feasible)
    sim = GemmModel(profile)
    wl = model_workload(profile, "qwen2.5-7b", "decode", batch=1)
    step = np.full(len(feasible), wl.fixed_s)
    for g in wl.gemms:
        step += g.count * sim.latency(cols, g)
    tok = wl.tokens_per_step / step
    best = float(np.nanmax(tok))
    roof = wl.roofline_tokens_per_s(profile)
    print(f"## Qwen2.5-7B decode, batch 1, tp 1, {profile.soc}: {len(feasible):,} feasible configs")
    print(f"optimum {best:.2f} tok/s = {100 * best / roof:.1f}% of the roofline {roof:.2f} tok/s; "
          f"median config {np.nanmedian(tok):.2f}, worst {np.nanmin(tok):.2f}")
    for pct in (1, 5, 10):
        print(f"configs within {pct}% of the optimum: {int(np.sum(tok >= best * (1 - pct / 100)))}")
    print("top 6:")
    for i in np.argsort(-tok)[:6]:
        print(f"  {space.config(feasible[i])}  {tok[i]:.2f} tok/s")
    print()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B2")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--fit", action="store_true",
                        help="refit the streaming and head constants (about a minute)")
    parser.add_argument("--validate", action="store_true",
                        help="leave-one-source-out errors and sweep ranks (a few minutes)")
    args = parser.parse_args()
    profile = load_profile(args.soc)
    print_fits(profile)
    if args.fit:
        fit()
    calibrate()
    if args.validate:
        validate()
    recommended_rank(profile)
    timing(profile, args.repeats)
    decode_landscape(profile)


if __name__ == "__main__":
    main()
