"""The chip's memory that every core shares: L2's read and write rates, and the smooth
maximum that prices a kernel whose cores together near a shared limit.

CANN's platform configuration states what L2 serves a cycle per AI core
(``[AICoreMemoryRates]`` of ``platform_config/Ascend910B1.ini``, CANN 9.0.0:
``l2_read_rate=110``, ``l2_write_rate=86`` bytes a cycle, beside the ``ddr_rate=32``
the reference quotes for HBM); times the AI cores and the clock that is 4.75 TB/s of
reads and 3.72 TB/s of writes on a 910B2. Reads and writes travel separate channels
(the rates are stated apart, and the write rate is not the read rate's share), so the
cores together are held by whichever direction they fill first. The rates are CANN's
own figures (its tiling cost models read them), not fitted to any timing here.

Read in a public Qwen3 decode roofline note that lists that ini's rates
(``V200-benchmark/qwen3/qwen3_dynamic_manual_scope/kernels/aic``, 2026-06-04).
"""

from __future__ import annotations

import numpy as np

from aoe_optuna.hardware.profile import SocProfile

L2_READ_BYTES_PER_CYCLE = 110.0  # per AI core: l2_read_rate
L2_WRITE_BYTES_PER_CYCLE = 86.0  # per AI core: l2_write_rate
# Queueing near a shared limit: a kernel's time is the p-norm of its busiest core's own
# time and the shared floors (p -> infinity would be a hard max). Assumed: a kernel
# whose core demand equals the shared supply runs 19% slower than either.
CONTENTION_P = 4.0


def l2_read_bytes_per_s(profile: SocProfile) -> float:
    return L2_READ_BYTES_PER_CYCLE * profile.cube_cores * profile.clock_hz


def l2_write_bytes_per_s(profile: SocProfile) -> float:
    return L2_WRITE_BYTES_PER_CYCLE * profile.cube_cores * profile.clock_hz


def l2_seconds(profile: SocProfile, read_bytes: float, write_bytes: float) -> float:
    """Seconds L2 takes to serve ``read_bytes`` of reads and ``write_bytes`` of writes
    from every core together: the busier of its read and write channels."""
    return max(read_bytes / l2_read_bytes_per_s(profile),
               write_bytes / l2_write_bytes_per_s(profile))


def contended(*seconds: float) -> float:
    """The smooth maximum of a busiest core's time and the shared floors it meets."""
    return float(np.sum(np.asarray(seconds, dtype=float) ** CONTENTION_P) ** (1.0 / CONTENTION_P))
