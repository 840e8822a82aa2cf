"""SoC profiles: the hardware figures every other part reads, each with its source.

Profiles are data files (``aoe_optuna/hardware/profiles/<SoC>.json``); a user adds a
chip by writing one more file and passing its path as ``hardware.soc``.
Each figure is ``{"value": ..., "source": "..."}``; a figure whose sources
disagree also carries ``"unsettled": "<the alternatives and why this value>"``.
A profile written by ``aoe-tune calibrate`` adds ``"calibration"``: the scale
factors fitted to the chip's own timings (:mod:`.chip_calibration`).
"""

from __future__ import annotations

import json
import math
import os
import stat
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from aoe_optuna.hardware.chip_calibration import (
    CalibrationError,
    ChipCalibration,
    calibration_from_dict,
)

DTYPE_BYTES = {"fp16": 2, "bf16": 2, "fp32": 4, "int8": 1}
MAX_PROFILE_BYTES = 1 << 20  # a profile is a few kB; a larger file is some other file

# Figures a profile must give, and the type each must have.
_FIGURES: dict[str, type] = {
    "cube_cores": int,
    "vector_cores": int,
    "cube_clock_mhz": float,
    "hbm_bytes": int,
    "l2_bytes": int,
    "hbm_bandwidth_gbs": float,
    "l2_bandwidth_gbs": float,
    "l1_bytes": int,
    "l0a_bytes": int,
    "l0b_bytes": int,
    "l0c_bytes": int,
    "ub_bytes": int,
    "macs_per_cycle": dict,  # dtype -> MACs per cycle per cube core
    "c0": dict,  # dtype -> inner fractal width in elements
    "gm_to_l1_bytes_per_cycle": float,
    "l1_to_l0a_bytes_per_cycle": float,
    "l1_to_l0b_bytes_per_cycle": float,
    "l0c_to_gm_bytes_per_cycle": float,
    "l1_k_steps": int,
    "interconnect_gbs": float,
    "interconnect_latency_us": float,
}


class ProfileError(ValueError):
    """A profile that cannot be found or read; the message names file and key."""


@dataclass(frozen=True)
class SocProfile:
    """One Ascend SoC as the tuner sees it."""

    soc: str
    cube_cores: int
    vector_cores: int
    cube_clock_mhz: float
    hbm_bytes: int
    l2_bytes: int
    hbm_bandwidth_gbs: float
    l2_bandwidth_gbs: float
    l1_bytes: int
    l0a_bytes: int
    l0b_bytes: int
    l0c_bytes: int
    ub_bytes: int
    macs_per_cycle: dict[str, int]
    c0: dict[str, int]
    gm_to_l1_bytes_per_cycle: float
    l1_to_l0a_bytes_per_cycle: float
    l1_to_l0b_bytes_per_cycle: float
    l0c_to_gm_bytes_per_cycle: float
    l1_k_steps: int
    interconnect_gbs: float
    interconnect_latency_us: float
    sources: dict[str, str] = field(default_factory=dict, compare=False)
    unsettled: dict[str, str] = field(default_factory=dict, compare=False)
    path: str = field(default="", compare=False)
    # a chip's own timings folded in (``aoe-tune calibrate``): None for a shipped profile
    calibration: ChipCalibration | None = None

    @property
    def clock_hz(self) -> float:
        return self.cube_clock_mhz * 1e6

    def peak_flops(self, dtype: str) -> float:
        """Peak cube throughput in FLOP/s: cores x MACs/cycle x 2 x clock."""
        return self.cube_cores * self.macs_per_cycle[dtype] * 2 * self.clock_hz

    def hbm_bandwidth(self) -> float:
        """HBM bandwidth in bytes/s."""
        return self.hbm_bandwidth_gbs * 1e9

    def expression_names(self) -> dict[str, float]:
        """Figures that constraint expressions may name (CANN ini spellings)."""
        return {
            "l0a_size": self.l0a_bytes,
            "l0b_size": self.l0b_bytes,
            "l0c_size": self.l0c_bytes,
            "l1_size": self.l1_bytes,
            "ub_size": self.ub_bytes,
            "cube_cores": self.cube_cores,
            "vector_cores": self.vector_cores,
        }


def available_socs() -> list[str]:
    """Names of the profiles shipped with the package."""
    folder = resources.files("aoe_optuna.hardware") / "profiles"
    return sorted(p.name[: -len(".json")] for p in folder.iterdir() if p.name.endswith(".json"))


def load_profile(soc_or_path: str) -> SocProfile:
    """Load a shipped profile by SoC name, or a user's profile file by path."""
    candidate = Path(soc_or_path)
    if candidate.suffix == ".json" and candidate.exists():
        path = candidate
        text = _profile_text(candidate)
    elif soc_or_path in available_socs():
        res = resources.files("aoe_optuna.hardware") / "profiles" / f"{soc_or_path}.json"
        path = Path(str(res))
        text = res.read_text()
    else:
        raise ProfileError(
            f"unknown SoC {soc_or_path!r}: expected one of {', '.join(available_socs())} "
            "or the path of a profile .json file"
        )
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"{path}: not valid JSON ({exc.msg} at line {exc.lineno})") from None
    except RecursionError:
        raise ProfileError(f"{path}: not a profile (objects nested too deeply)") from None
    return profile_from_dict(data, str(path))


def _profile_text(path: Path) -> str:
    """The text of a profile file, checked before it is read: a FIFO would block the read
    until a writer comes, a folder or a binary file would end in a traceback that does
    not name the file."""
    try:
        info = os.stat(path)
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the profile ({exc.strerror})") from None
    if stat.S_ISDIR(info.st_mode):
        raise ProfileError(f"{path}: expected a profile .json file, got a folder")
    if not stat.S_ISREG(info.st_mode):
        raise ProfileError(f"{path}: expected a profile .json file, got something that is "
                           "not a regular file (a FIFO, a device or a socket)")
    if info.st_size > MAX_PROFILE_BYTES:
        raise ProfileError(f"{path}: expected a profile .json file under "
                           f"{MAX_PROFILE_BYTES >> 20} MiB, got {info.st_size:,} bytes")
    try:
        return path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise ProfileError(f"{path}: expected a profile as UTF-8 JSON text, got a byte that "
                           f"is not ({exc.reason})") from None
    except OSError as exc:
        raise ProfileError(f"{path}: cannot read the profile ({exc.strerror})") from None


def profile_from_dict(data: dict[str, Any], where: str = "<profile>") -> SocProfile:
    """Build and check a profile from its parsed JSON."""
    if not isinstance(data, dict) or not isinstance(data.get("soc"), str):
        raise ProfileError(f"{where}: key 'soc': expected the SoC name as a string")
    figures = data.get("figures")
    if not isinstance(figures, dict):
        raise ProfileError(f"{where}: key 'figures': expected an object of figures")
    values: dict[str, Any] = {}
    sources: dict[str, str] = {}
    unsettled: dict[str, str] = {}
    for key, typ in _FIGURES.items():
        entry = figures.get(key)
        if not isinstance(entry, dict) or "value" not in entry or "source" not in entry:
            raise ProfileError(
                f"{where}: key 'figures.{key}': expected {{\"value\": ..., \"source\": ...}}"
            )
        value = entry["value"]
        if typ is float and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        if not isinstance(value, typ) or isinstance(value, bool):
            raise ProfileError(f"{where}: key 'figures.{key}.value': expected {typ.__name__}")
        if typ in (int, float) and not 0 < value < math.inf:  # NaN fails too
            raise ProfileError(f"{where}: key 'figures.{key}.value': expected a positive "
                               f"finite number, got {value!r}")
        values[key] = value
        sources[key] = str(entry["source"])
        if "unsettled" in entry:
            unsettled[key] = str(entry["unsettled"])
    for table in ("macs_per_cycle", "c0"):
        missing = [d for d in DTYPE_BYTES if d not in values[table]]
        if missing:
            raise ProfileError(f"{where}: key 'figures.{table}': missing dtypes {missing}")
    calibration = None
    if "calibration" in data:
        try:
            calibration = calibration_from_dict(data["calibration"], where)
        except CalibrationError as exc:
            raise ProfileError(str(exc)) from None
    return SocProfile(
        soc=data["soc"], sources=sources, unsettled=unsettled, path=where,
        calibration=calibration, **values
    )
