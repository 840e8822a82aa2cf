"""A trial's config as an index row of a SearchSpace: the one way both samplers read it.

What a trial will measure is its enqueued fixed params, its claim while it is
live, and its suggested params (:func:`aoe_optuna.samplers.claims.claimed_params`).
A trial whose params are not a config of the space (another space's trial, or
one that died before suggesting) has no row.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
from optuna.trial import FrozenTrial

from aoe_optuna.samplers.claims import claimed_params
from aoe_optuna.space.search_space import SearchSpace


def config_row(space: SearchSpace, params: Mapping[str, Any]) -> np.ndarray | None:
    """The index row of ``params`` in ``space``, or None when they are not one of its configs."""
    try:
        return space.index(dict(params))
    except (ValueError, KeyError, TypeError):  # ParamError is a ValueError
        return None


def trial_row(space: SearchSpace, trial: FrozenTrial) -> np.ndarray | None:
    """The index row of the config ``trial`` measures (or will), or None."""
    return config_row(space, claimed_params(trial))
