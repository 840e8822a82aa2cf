"""How far one source's figures scatter about their own offset, as the shipped model
shows it: the prior a chip calibration's band from few kernels leans on.

A calibration's band comes from its family's leave-one-out residuals, and three
kernels that happen to agree would state a band of a few percent that the family's
next kernels do not keep (one source's 3 fitted figures within 3% of one another,
its other 3 figures 27% off). The spread of one source's figures about its own mean
is known beyond the family at hand: every held-out figure in ``bands.json`` (each
simulated by a model that never saw its source) gives it, pooled over the sources of
every kind (:func:`.source_spread.within`). A family's band pools its own residual
variance with that one as a conjugate prior worth :data:`PRIOR_KERNELS` kernels'
degrees of freedom: with 3 kernels the prior dominates, with 30 the family's own
scatter does.
"""

from __future__ import annotations

import math
from functools import cache

from aoe_optuna.calibration.bands import shipped_document
from aoe_optuna.calibration.source_spread import within

PRIOR_KERNELS = 2  # the prior weighs as much as a family of the fewest kernels fitted (3)


@cache
def within_source() -> tuple[float, int]:
    """The pooled within-source variance of log(simulated / published) over the shipped
    held-out figures, and the degrees of freedom it rests on."""
    groups: dict[tuple[str, str], list[float]] = {}
    for row in shipped_document()["rows"]:
        groups.setdefault((row["kind"], row["source"]), []).append(
            math.log(row["simulated_us"] / row["published_us"]))
    return within(list(groups.values()))


def pooled_variance(own_ss: float, own_df: int) -> tuple[float, int]:
    """A family's residual variance (its sum of squares about the mean, ``own_df``
    degrees of freedom) pooled with the prior: ``(variance, degrees of freedom)``."""
    prior, _ = within_source()
    df = own_df + PRIOR_KERNELS
    return (own_ss + PRIOR_KERNELS * prior) / df, df
