"""GPUCBSampler of aoe_optuna, as an OptunaHub package."""

from aoe_optuna.samplers.gp_ucb import GPUCBSampler

__all__ = ["GPUCBSampler"]
