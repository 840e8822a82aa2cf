"""A fixed-length, normalised description of the operator being tuned.

The policy sees the same vector for every trial of a study; it is what lets a
policy pretrained on other GEMM shapes and SoCs start a new one near its
optimum. Every entry is roughly in [0, 1] so no input dominates the first
layer. The names are saved with a pretrained policy and checked on load.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.workload.gemm import Gemm, Workload

FEATURE_VERSION = 1
_DTYPES = tuple(DTYPE_BYTES)  # fp16, bf16, fp32, int8

FEATURE_NAMES: tuple[str, ...] = (
    "log2_m_mean", "log2_k_mean", "log2_n_mean",  # flop-weighted over the workload's GEMMs
    "log2_m_min", "log2_k_min", "log2_n_min",
    "log2_m_max", "log2_k_max", "log2_n_max",
    "m_below_fractal",  # share of flops in GEMMs with M < 16 (decode: padded rows)
    "log2_flops", "n_gemms", "gemm_share",  # share of the step spent in GEMMs at roofline
    *(f"dtype_{d}" for d in _DTYPES),
    "cube_cores", "clock_ghz", "log2_hbm_gbs", "log2_l1", "log2_l0a", "log2_l0b", "log2_l0c",
    "log2_macs", "arith_intensity",  # log2 of (flops / min bytes) against the SoC's ridge
)


def _scaled_log2(x: float, lo: float, hi: float) -> float:
    return float((np.log2(max(x, 1.0)) - lo) / (hi - lo))


def operator_features(
    gemms: Sequence[Gemm], profile: SocProfile, fixed_s: float = 0.0
) -> np.ndarray:
    """Features of the GEMMs of one kernel tuned on ``profile`` (same order as FEATURE_NAMES)."""
    if not gemms:
        raise ValueError("operator_features needs at least one GEMM")
    dims = np.array([[g.M, g.K, g.N] for g in gemms], dtype=float)
    weight = np.array([g.count * g.flops for g in gemms], dtype=float)
    weight = weight / weight.sum()
    logs = np.log2(dims)
    mean = (weight[:, None] * logs).sum(axis=0)
    dtype = gemms[0].dtype
    flops = float(sum(g.count * g.flops for g in gemms))
    bytes_ = float(sum(g.count * g.min_bytes for g in gemms))
    roof = sum(g.count * g.roofline_s(profile) for g in gemms)
    ridge = profile.peak_flops(dtype) / profile.hbm_bandwidth()
    feats = [
        *(mean / 24.0), *(logs.min(axis=0) / 24.0), *(logs.max(axis=0) / 24.0),
        float(weight[dims[:, 0] < 16].sum()),
        _scaled_log2(flops, 20.0, 50.0),
        min(len(gemms), 16) / 16.0,
        roof / (roof + fixed_s) if roof + fixed_s > 0 else 1.0,
        *(1.0 if dtype == d else 0.0 for d in _DTYPES),
        profile.cube_cores / 32.0,
        profile.cube_clock_mhz / 2000.0,
        _scaled_log2(profile.hbm_bandwidth_gbs, 8.0, 13.0),
        _scaled_log2(profile.l1_bytes, 16.0, 22.0),
        _scaled_log2(profile.l0a_bytes, 13.0, 19.0),
        _scaled_log2(profile.l0b_bytes, 13.0, 19.0),
        _scaled_log2(profile.l0c_bytes, 14.0, 20.0),
        _scaled_log2(profile.macs_per_cycle[dtype], 8.0, 16.0),
        float(np.clip(0.5 + np.log2(max(flops / bytes_, 1e-9) / ridge) / 16.0, 0.0, 1.0)),
    ]
    out = np.asarray(feats, dtype=np.float32)
    assert out.shape == (len(FEATURE_NAMES),)
    return out


def workload_features(workload: Workload, profile: SocProfile) -> np.ndarray:
    """Features of a model workload (or a single GEMM made into one)."""
    return operator_features(workload.gemms, profile, workload.fixed_s)


def no_features() -> np.ndarray:
    """The vector used when nothing is known about the operator (a plain Optuna study)."""
    return np.zeros(len(FEATURE_NAMES), dtype=np.float32)
