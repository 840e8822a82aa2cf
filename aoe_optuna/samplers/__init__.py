"""Optuna samplers that know the tiling constraints, and the registry ``aoe-tune`` uses.

``GPUCBSampler`` (BoTorch GP + UCB over the exact feasible set) and
``ReinforceSampler`` (a masked policy network trained with REINFORCE) are plain
``optuna.samplers.BaseSampler`` subclasses::

    from aoe_optuna.samplers import GPUCBSampler
    study = optuna.create_study(direction="maximize", sampler=GPUCBSampler(space=space, seed=0))

They import torch and BoTorch, so they are loaded on first use, not with this package.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from aoe_optuna.samplers.gp_ucb import GPUCBSampler
    from aoe_optuna.samplers.reinforce import LearnerSettings, ReinforceSampler

_LAZY = {
    "GPUCBSampler": "aoe_optuna.samplers.gp_ucb",
    "ReinforceSampler": "aoe_optuna.samplers.reinforce",
    "LearnerSettings": "aoe_optuna.samplers.reinforce",
}

__all__ = ["GPUCBSampler", "LearnerSettings", "ReinforceSampler"]


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(_LAZY[name]), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted([*globals(), *__all__])
