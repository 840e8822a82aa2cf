"""A small cpu-backend study for the build pool's tests: real builds, short timings."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import optuna

from aoe_optuna.attrs import ATTR_MEASURED
from aoe_optuna.spec.loader import StudySpec, spec_from_dict

SPACE = {
    "tile_m": [16, 32, 64], "tile_n": [16, 32, 64], "tile_k": [16, 32, 64],
    "pipeline": [0, 1, 2], "l1_prefetch": [0, 1], "output_align": [0, 1],
    "opt_level": ["O1", "O2"], "schedule": ["default", "balanced"],
    "unroll_factor": [0, 4], "layout": ["row_major"], "quantization": [False],
}
BASELINE = {"tile_m": 32, "tile_n": 32, "tile_k": 32, "pipeline": 0, "l1_prefetch": 0,
            "output_align": 0, "opt_level": "O2", "schedule": "default", "unroll_factor": 0,
            "layout": "row_major", "quantization": False}


def cpu_spec(work_dir: Path, **backend: Any) -> StudySpec:
    """64x64x64 fp32 GEMMs, timed for at most 0.05 s each; builds cached in ``work_dir``."""
    return spec_from_dict({
        "op_name": "GemmKernel", "search_space": SPACE, "baseline": BASELINE,
        "optimization_objective": "throughput", "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
        "backend": {"name": "cpu", "max_seconds": 0.05, "work_dir": str(work_dir), **backend},
    })


def measured(study: optuna.Study) -> list[optuna.trial.FrozenTrial]:
    return [t for t in study.get_trials(deepcopy=False) if t.user_attrs.get(ATTR_MEASURED)
            and "repeat_of" not in t.user_attrs]
