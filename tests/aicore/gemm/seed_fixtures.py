"""The baseline config and a one-config latency, as the GEMM model tests share them (the
fixtures ``profile``, ``model`` and ``seed`` are in this folder's conftest.py)."""

from __future__ import annotations

import numpy as np

from aoe_optuna.workload.gemm import Gemm

BASELINE = {"tile_m": np.array([128]), "tile_k": np.array([64]), "tile_n": np.array([256]),
            "pipeline": np.array([2]), "l1_prefetch": np.array([1]),
            "output_align": np.array([1])}


def one(model, gemm: Gemm, cols=BASELINE) -> float:
    return float(model.latency(cols, gemm)[0])
