"""Calibrate and benchmark the Ascend simulator; prints the tables docs/SIMULATOR.md quotes.

Usage: python scripts/calibrate_simulator.py [--soc Ascend910B2] [--repeats 5]

1. the constants fitted to msKPP's single-core tables (MMAD, data movers, nd2nz);
2. the kernel launch overhead fitted (least squares on log TFLOPS) to the
   torch_npu square fp16 figures, and the calibration table at that value;
3. where Huawei's recommended block (128, 256, 64, double buffered) ranks;
4. the wall time of evaluating the whole 49,152-point seed space for one GEMM;
5. the Qwen2.5-7B decode landscape: optimum, roofline, configs within 1% / 5%.
"""

from __future__ import annotations

import argparse
import platform
import time

import numpy as np
from scipy.optimize import minimize_scalar

from aoe_optuna.backends.simulator import cube, transfer
from aoe_optuna.backends.simulator.backend import KERNEL_LAUNCH_S, AscendSimulator
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.models import Gemm, model_workload

# torch_npu matmul on 910B2, square fp16, TFLOPS (zzc0721/torch-performance-test-data
# issue 109, quoted in the reference ascend-910b.md).
PUBLISHED_TFLOPS = {1024: 98.1, 2048: 251.0, 4096: 314.5, 8192: 305.5, 10240: 274.8}
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
    nd = transfer.nd2nz()
    print(f"nd2nz: peak {nd.peak_gbs:.1f} GB/s, half width {nd.half_width_bytes:.0f} B, "
          f"rows not a multiple of 64 B x{nd.unaligned_factor:.2f}")
    print()


def calibrate(profile: SocProfile) -> float:
    """Fit the launch overhead; print the calibration table; return the fitted seconds."""
    space = seed_space(profile)
    feasible = space.all_feasible()
    cols = space.columns(feasible)
    bare = AscendSimulator(profile, launch_us=0.0)
    best: dict[int, tuple[float, dict]] = {}
    for size in PUBLISHED_TFLOPS:
        lat = bare.latency(cols, Gemm(size, size, size))
        i = int(np.nanargmin(lat))
        best[size] = (float(lat[i]), space.config(feasible[i]))

    def loss(launch_s: float) -> float:
        return sum(np.log(Gemm(s, s, s).flops / (best[s][0] + launch_s) / 1e12
                          / PUBLISHED_TFLOPS[s]) ** 2 for s in PUBLISHED_TFLOPS)

    fitted = float(minimize_scalar(loss, bounds=(0.0, 50e-6), method="bounded").x)
    print("## Launch overhead fitted to the torch_npu figures")
    print(f"fitted: {fitted * 1e6:.2f} us; "
          f"in use (KERNEL_LAUNCH_S): {KERNEL_LAUNCH_S * 1e6:.2f} us")
    print()
    print(f"## Calibration on {profile.soc}, square fp16, best config of the seed space")
    print("| M=K=N | published TFLOPS | simulator TFLOPS | error "
          "| best config (m,k,n,pipe,pf,al) |")
    print("|---|---|---|---|---|")
    for size, pub in PUBLISHED_TFLOPS.items():
        lat, cfg = best[size]
        tf = Gemm(size, size, size).flops / (lat + KERNEL_LAUNCH_S) / 1e12
        shape = ",".join(str(cfg[k]) for k in ("tile_m", "tile_k", "tile_n", "pipeline",
                                                "l1_prefetch", "output_align"))
        print(f"| {size} | {pub:.1f} | {tf:.1f} | {100 * (tf / pub - 1):+.1f}% | {shape} |")
    print(f"peak (derived) {profile.peak_flops('fp16') / 1e12:.1f} TFLOPS")
    print()
    return fitted


def recommended_rank(profile: SocProfile) -> None:
    space = seed_space(profile)
    feasible = space.all_feasible()
    sim = AscendSimulator(profile)
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
    sim = AscendSimulator(profile)
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
    sim = AscendSimulator(profile)
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
    args = parser.parse_args()
    profile = load_profile(args.soc)
    print_fits(profile)
    calibrate(profile)
    recommended_rank(profile)
    timing(profile, args.repeats)
    decode_landscape(profile)


if __name__ == "__main__":
    main()
