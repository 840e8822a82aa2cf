"""ReinforceSampler of aoe_optuna, as an OptunaHub package."""

from aoe_optuna.samplers.reinforce import LearnerSettings, ReinforceSampler

__all__ = ["LearnerSettings", "ReinforceSampler"]
