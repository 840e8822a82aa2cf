"""The uncalibrated simulator's time of each distinct kernel, one simulation per shape.

A calibration compares every kernel with the model. The model's cost is per
GEMM shape (its geometry and schedule), barely per config, so the kernels are
grouped by shape: a shape's tiled kernels are one vectorised call, and a
library kernel (no tiling) is the best of the library space, simulated once
per shape and dtype however many rows time it. The simulations then cost
the distinct shapes (capped by :data:`.input_caps.MAX_SHAPES`), not the rows. An
attention or vector kernel is the library kernel a deployment calls: its problem's
``default`` charge (:mod:`aoe_optuna.aicore.layer_models`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import numpy as np

from aoe_optuna.aicore.gemm.model import GemmModel
from aoe_optuna.aicore.layer_models import layer_charge
from aoe_optuna.calibration.kernels import MeasuredKernel
from aoe_optuna.calibration.residuals import library_space
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.read_progress import ProgressLine


def model_us(kernels: Sequence[MeasuredKernel], profile: SocProfile) -> np.ndarray:
    """The model's time (us) of each kernel, on ``profile`` without its calibration; an
    infeasible tiling names the kernel's first row."""
    base = replace(profile, calibration=None)
    sim = GemmModel(base)
    library = layer_charge(base, "default")
    by_shape: dict[object, list[int]] = {}
    for i, kernel in enumerate(kernels):
        by_shape.setdefault(kernel.first.shape, []).append(i)
    out = np.empty(len(kernels))
    progress = ProgressLine()
    for done, members in enumerate(by_shape.values()):
        progress.say(lambda done=done: f"simulated {done:,} of {len(by_shape):,} shapes "
                     f"({len(kernels):,} distinct kernels)")
        problem = kernels[members[0]].problem
        if problem is not None:
            out[members] = library(problem) * 1e6
            continue
        tiled = [i for i in members if kernels[i].tiling is not None]
        untiled = [i for i in members if kernels[i].tiling is None]
        if untiled:
            out[untiled] = _library_us(sim, kernels[untiled[0]], base.soc)
        if tiled:
            out[tiled] = _tiled_us(sim, [kernels[i] for i in tiled], base.soc)
    return out


def _library_us(sim: GemmModel, kernel: MeasuredKernel, soc: str) -> float:
    """A library kernel's time: the best config of the library space."""
    space = library_space(soc, kernel.gemm.dtype)
    library = GemmModel(sim.profile, library_l1=True)
    seconds = library.latency(space.columns(space.all_feasible()), kernel.gemm)
    return float(np.nanmin(seconds)) * 1e6


def _tiled_us(sim: GemmModel, kernels: list[MeasuredKernel], soc: str) -> np.ndarray:
    """Kernels of one GEMM shape, each with its own tiling (the parameters it leaves out
    at their defaults, as the simulator fills them), in one call."""
    defaults = default_config()
    tilings = [k.tiling or {} for k in kernels]
    cols = {}
    for name in sorted({name for t in tilings for name in t}):
        values = [t.get(name, defaults[name]) for t in tilings]
        codes = {v: to_code(name, v) for v in set(values)}  # a few values, many kernels
        cols[name] = np.array([codes[v] for v in values])
    seconds = sim.latency(cols, kernels[0].gemm)
    broken = np.flatnonzero(~np.isfinite(seconds))
    if broken.size:
        first = kernels[int(broken[0])].first
        g = first.gemm
        raise WorkloadFileError(first.source, f"{first.place}, column 'tiling'",
                                f"a tiling the {soc}'s hardware rules allow for "
                                f"{g.M}x{g.N}x{g.K} {g.dtype}", "one that breaks them")
    return seconds * 1e6
