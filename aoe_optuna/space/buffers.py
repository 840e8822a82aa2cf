"""An AI core's on-chip buffers against what a tiling needs of them, as rule messages."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile


def overflows(profile: SocProfile, needs: Mapping[str, int]) -> list[str]:
    """``"L1: needs 600 KiB, has 512 KiB"`` for each buffer (L1, L0A, L0B, L0C, UB) that
    ``needs`` overfills on ``profile``."""
    capacity = {"L1": profile.l1_bytes, "L0A": profile.l0a_bytes, "L0B": profile.l0b_bytes,
                "L0C": profile.l0c_bytes, "UB": profile.ub_bytes}
    return [f"{buffer}: needs {need // 1024} KiB, has {capacity[buffer] // 1024} KiB"
            for buffer, need in needs.items() if need > capacity[buffer]]
