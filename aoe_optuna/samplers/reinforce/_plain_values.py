"""A plain study's objective values as the throughputs the learner takes the log of.

The learner and the local moves work on log throughput: positive numbers,
larger is better, a failure is NaN. A plain Optuna study's value is any real
number, in either direction, so it is mapped by

    v -> exp(asinh(s v)),   s = +1 when maximising, -1 when minimising:

positive and strictly increasing in ``s v``, so the order of the configs is
kept, and its log, ``asinh(s v)``, is about ``log(2 s v)`` for a large
positive ``s v``, linear near zero and about ``-log(2 |v|)`` for a large
negative one: minimising a time of many units learns from the log of its
inverse, the log throughput a spec-driven study gives. The clip keeps
``exp`` finite for any finite value.
"""

from __future__ import annotations

import numpy as np

LOG_CLIP = 700.0  # exp(700) is finite in float64


def as_throughput(value: float, maximize: bool) -> float:
    """``value`` of a plain study as a positive, larger-is-better number (NaN stays NaN)."""
    x = value if maximize else -value
    return float(np.exp(np.clip(np.arcsinh(x), -LOG_CLIP, LOG_CLIP)))
