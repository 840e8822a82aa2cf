"""Shared fixtures of the workload tests: the 910B2 profile and the shipped model/profile files."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.hardware.profile import SocProfile, load_profile

STUDIES = Path(__file__).resolve().parents[2] / "studies"
MODELS_DIR = STUDIES / "models"
PROFILES_DIR = STUDIES / "profiles"


@pytest.fixture(scope="module")
def profile() -> SocProfile:
    return load_profile("Ascend910B2")
