"""GP-UCB sampler: BoTorch Gaussian process + UCB over the exact feasible set."""

from aoe_optuna.samplers.gp_ucb.sampler import GPUCBSampler

__all__ = ["GPUCBSampler"]
