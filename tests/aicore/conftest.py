"""The 910B2 profile, shared by the AI Core models' tests (a module that defines a
fixture of the same name keeps its own)."""

from __future__ import annotations

import pytest

from aoe_optuna.hardware.profile import load_profile


@pytest.fixture(scope="module")
def profile():
    return load_profile("Ascend910B2")
