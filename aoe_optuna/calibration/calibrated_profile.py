"""The file ``aoe-tune calibrate`` writes: the base profile's figures, unchanged, and the
fitted ``calibration`` section a spec's ``hardware.soc`` reads by the file's path."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path
from typing import Any

from aoe_optuna.hardware.chip_calibration import ChipCalibration
from aoe_optuna.hardware.profile import SocProfile, available_socs


def base_document(profile: SocProfile) -> dict[str, Any]:
    """The JSON the profile was read from (shipped by name, or the user's file)."""
    if profile.soc in available_socs() and not Path(profile.path).is_file():
        text = (resources.files("aoe_optuna.hardware") / "profiles"
                / f"{profile.soc}.json").read_text()
    else:
        text = Path(profile.path).read_text()
    return json.loads(text)


def calibrated_document(profile: SocProfile, calibration: ChipCalibration) -> dict[str, Any]:
    doc = base_document(profile)
    doc["calibration"] = calibration.document()
    return doc


def calibrated_text(profile: SocProfile, calibration: ChipCalibration) -> str:
    return json.dumps(calibrated_document(profile, calibration), indent=2) + "\n"
