"""GP-UCB sampler: BoTorch Gaussian process + UCB over the exact feasible set.

Small modules, one job each: ``_history`` (trials -> arrays), ``_targets``
(values -> copula scores), ``_tiling_features`` (tile fit as GP inputs),
``_candidates`` (the unseen feasible set or a pool), ``_design`` (space-filling
start), ``_model`` (the GP and a fast posterior), ``_acquisition`` (UCB and its
success weighting), ``_feasibility`` and ``_feasibility_halfspaces`` (P(success)
from failures), ``_local`` (opt-in local phase), ``_pruned_ranking`` (the best candidates without
every std, at 1,000 trials), ``_prior_scores``, ``_prior_model`` and ``_prior_step``
(a prior in the GP's mean, its weight fitted), ``settings`` (the grouped options);
``sampler`` only orchestrates.
"""

from aoe_optuna.samplers.gp_ucb.sampler import GPUCBSampler
from aoe_optuna.samplers.gp_ucb.settings import (
    FailureModel,
    ModelSettings,
    PriorSettings,
    SearchSettings,
)

__all__ = ["FailureModel", "GPUCBSampler", "ModelSettings", "PriorSettings", "SearchSettings"]
