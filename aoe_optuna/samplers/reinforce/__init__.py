"""ReinforceSampler: a policy network that learns to propose tilings.

Small modules: ``_features`` (operator feature vector), ``_policy`` (the
autoregressive network, save/load), ``_masking`` (feasible and untried
choices), ``_learner`` (REINFORCE), ``_replay`` (rebuild from storage),
``_propose`` (one masked draw), ``sampler`` (the Optuna sampler) and
``pretrain`` (transfer across shapes and SoCs on the simulator).
"""

from aoe_optuna.samplers.reinforce._learner import LearnerSettings
from aoe_optuna.samplers.reinforce._policy import PolicyMismatchError
from aoe_optuna.samplers.reinforce.sampler import ReinforceSampler

__all__ = ["LearnerSettings", "PolicyMismatchError", "ReinforceSampler"]
