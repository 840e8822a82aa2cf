"""Priors for a sampler: a cheap prediction of the objective for any config of the space.

What the project already knows about a space (the simulator's model, another
study of the same kernel, a recording of it on another device, a knowledge
base entry) enters GPUCBSampler as a :class:`ConfigPrior`; the sampler learns
from the measurements how far to trust it (``gp_ucb/_prior_model.py``).
``base`` holds the protocol and a plain callable's adapter, ``table`` a prior
from measured configs, ``simulator`` the simulator calibrated per kernel
family as the study runs.
"""

from aoe_optuna.samplers.priors.base import CallablePrior, ConfigPrior, as_prior
from aoe_optuna.samplers.priors.table import TablePrior

__all__ = ["CallablePrior", "ConfigPrior", "TablePrior", "as_prior"]
