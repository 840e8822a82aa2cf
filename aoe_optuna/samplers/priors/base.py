"""What a prior is to GPUCBSampler: a name, and predictions for index rows of the space.

A prediction is the objective value the prior expects, in the study's own
direction and units (tokens/s for a throughput study), or NaN where it has no
guess. Only its order matters: the sampler turns predictions into normal
scores of their rank (``gp_ucb/_prior_scores.py``), so a prior in other units
(another shape's tokens/s, another device's time inverted) serves as well.
A prior that learns from the study's own measurements (the simulator,
calibrated per kernel family) also has ``observe``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, Protocol, runtime_checkable

import numpy as np

from aoe_optuna.space.search_space import SearchSpace


@runtime_checkable
class ConfigPrior(Protocol):
    """A cheap prediction of the objective for every config of a space."""

    name: str  # how the run summary names it ("recording gemm_RTX_3060_laptop")

    def predict(self, space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        """(n,) predicted objective values of the index ``rows`` (NaN: no guess)."""
        ...


@runtime_checkable
class ObservingPrior(ConfigPrior, Protocol):
    """A prior that recalibrates itself on the study's measurements as they arrive."""

    def observe(self, space: SearchSpace, rows: np.ndarray, values: np.ndarray) -> bool:
        """Take the completed ``rows`` and their ``values``; True when predictions changed."""
        ...


class CallablePrior:
    """A plain function of a config (``{"x": 3, "kind": "a"} -> predicted value``) as a prior.

    For a plain Optuna user's own model. It is called once per config the
    sampler scores (the sampler keeps each answer), so it suits spaces of up
    to some hundred thousand configs.
    """

    def __init__(self, fn: Callable[[Mapping[str, Any]], float], name: str | None = None) -> None:
        self.fn = fn
        self.name = name or getattr(fn, "__name__", "a function")

    def predict(self, space: SearchSpace, rows: np.ndarray) -> np.ndarray:
        out = np.empty(rows.shape[0])
        for i, config in enumerate(space.configs(rows)):
            value = self.fn(config)
            out[i] = float("nan") if value is None else float(value)
        return out


PriorArgument = ConfigPrior | Callable[[Mapping[str, Any]], float]


def as_prior(prior: PriorArgument | None) -> ConfigPrior | None:
    """``GPUCBSampler(prior=...)``'s argument as a ConfigPrior (a callable is wrapped)."""
    if prior is None or isinstance(prior, ConfigPrior):
        return prior
    if callable(prior):
        return CallablePrior(prior)
    raise TypeError(f"prior: expected a ConfigPrior or a function of a config, got "
                    f"{type(prior).__name__}")
