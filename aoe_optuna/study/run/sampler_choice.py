"""The sampler a study runs with, as it is stored in the study.

Both the session that picks it (:func:`aoe_optuna.study.session.choose_sampler`)
and the worker pool that hands it to each worker process
(:class:`aoe_optuna.study.run.worker_pool.WorkerPlan`) hold one, so it lives
below both.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class SamplerChoice:
    """The sampler a study runs with, as stored in it (a resume without --sampler gets it)."""

    name: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    seed: int | None = None
    stored: bool = False  # taken from the study, not from the request
    prior: Any = field(default=None, compare=False)  # the request's, passed to the sampler
