"""GPUCBSampler of aoe_optuna, as an OptunaHub package."""

from aoe_optuna.samplers.gp_ucb import FailureModel, GPUCBSampler, ModelSettings, SearchSettings

__all__ = ["FailureModel", "GPUCBSampler", "ModelSettings", "SearchSettings"]
