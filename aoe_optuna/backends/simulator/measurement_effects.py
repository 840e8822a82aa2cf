"""What a measurement adds to a latency: noise, its cost, hidden failures, int8 error.

* Noise: multiplicative, log-normal with sigma ``noise``, drawn from a
  generator seeded by a stable hash of (seed, config, GEMM), so the same
  trial measured twice reads the same, as a cached measurement would.
* Cost: the virtual seconds a hardware measurement would take, build +
  (warm-up + timed repeats) x latency, so time budgets mean the same on every
  backend. Build seconds are an assumption (a CANN Ascend C kernel build takes
  tens of seconds), overridable.
* Hidden failures: on hardware ``MultiCoreMatmulTiling::GetTiling`` returns -1
  for tilings that pass the documented rules (hidden workspace budgets). We
  model one such budget: the host tiling reserves part of L1 (bias, scale and
  workspace tables), so configs whose L1 blocks leave less than that fail.
  A region of the space, not random noise: a feasibility model can learn it.
* int8 accuracy: relative RMS error of a length-K dot product with symmetric
  int8 quantization (per row of A, per column of B) against the unquantized
  result, for Gaussian data: each operand's rounding noise is Delta/sqrt(12),
  Delta = E[max |x|] / 127, with the expected maximum of K draws taken as the
  1 - 1/(2K) quantile of |N(0, 1)|.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from typing import Any

import numpy as np

from aoe_optuna.workload.gemm import Gemm

INT8_LEVELS = 127


def noise_factor(sigma: float, seed: int, config: Mapping[str, Any], gemm: Gemm,
                 draw: int = 0) -> float:
    """exp(N(0, sigma)), deterministic in (seed, config, gemm, draw).

    Draw 0 is a config's first timing (the same in every run of a seed); a
    re-timing takes draws 1, 2, ... so its noise is independent of the first.
    """
    if sigma <= 0:
        return 1.0
    key = json.dumps([seed, sorted((k, str(v)) for k, v in config.items()), list(gemm.key)]
                     + ([draw] if draw else []))
    digest = hashlib.blake2b(key.encode(), digest_size=8).digest()
    rng = np.random.default_rng(int.from_bytes(digest, "little"))
    return float(np.exp(sigma * rng.standard_normal()))


def measurement_cost_s(latency_s: float, build_s: float, warmup: int, repeats: int) -> float:
    """Virtual seconds one hardware measurement would cost."""
    return build_s + (warmup + repeats) * latency_s


def int8_relative_error(k: int) -> float:
    """Relative RMS error of an int8 GEMM of depth ``k`` vs the unquantized one."""
    from scipy.special import ndtri  # at first use: most processes never need it

    expected_max = float(ndtri(1.0 - 0.25 / k))  # |N(0,1)| max of k draws ~ N quantile 1-1/(4k)
    step = expected_max / INT8_LEVELS
    return float(np.sqrt(2.0) * step / np.sqrt(12.0))


def hidden_l1_failures(l1_need: np.ndarray, l1_bytes: int, reserved_bytes: int) -> np.ndarray:
    """True where GetTiling would return -1: the L1 blocks leave less than the reserve."""
    return l1_need + reserved_bytes > l1_bytes
