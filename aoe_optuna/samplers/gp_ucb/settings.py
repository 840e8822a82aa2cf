"""GPUCBSampler's grouped options: how failures weigh, the GP model, the search.

Each group is a frozen dataclass that checks its values when made; from
``--sampler-kwargs`` a group is a JSON object of its fields
(``{"failures": {"model": "off"}, "search": {"local_patience": 5}}``), turned
into the dataclass by :func:`aoe_optuna.samplers.settings.settings_of`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from aoe_optuna.samplers.gp_ucb._acquisition import BetaSchedule
from aoe_optuna.samplers.gp_ucb._candidates import ENUMERATE_LIMIT, POOL_SIZE
from aoe_optuna.samplers.gp_ucb._local import LOCAL_RADIUS
from aoe_optuna.samplers.gp_ucb._pruned_ranking import FAST_FROM
from aoe_optuna.samplers.gp_ucb._targets import TRANSFORMS, TargetTransform
from aoe_optuna.samplers.value_grid import FLOAT_GRID_POINTS

FailureKind = Literal["auto", "vote", "halfspaces", "off"]
PriorMechanism = Literal["mean", "feature"]
_MECHANISMS = ("mean", "feature")
Weighting = Literal["auto", "success", "chance", "gain"]
_KINDS = ("auto", "vote", "halfspaces", "off")
_WEIGHTINGS = ("auto", "success", "chance", "gain")


@dataclass(frozen=True)
class ResolvedFailures:
    """The failure model one space runs with: "auto" resolved."""

    model: Literal["vote", "halfspaces"]
    weighting: Literal["success", "chance", "gain"]


@dataclass(frozen=True)
class FailureModel:
    """How failed trials weigh on the acquisition, through a learned P(success).

    ``model``: "vote" (outcomes of nearby configs vote, ``_feasibility``),
    "halfspaces" (an AND of halfspaces in the log2 encoding, which learns tiling
    rules such as divisibility that split neighbouring configs,
    ``_feasibility_halfspaces``), "off" (failures are only never repeated) or
    "auto" (default): "vote" with a spec, whose rules are already in the space and
    whose failures are rare and irregular; "halfspaces" on a plain study of int and
    categorical parameters, whose failures are the rules no spec stated; "vote"
    where a plain study has float parameters.

    ``weighting``: "success": P * (UCB - a floor below every UCB), which keeps to
    configs likely to run; "chance": the best UCB among configs with P >= 0.5, a
    chance constraint that needs the calibrated P of the halfspaces; "gain":
    P * max(UCB - best predicted mean, 0), as constrained EI weights its
    improvement, which searches through configs that fail (for studies where a
    failed trial costs little); "auto" (default): "chance" with the halfspaces,
    "success" with the vote. docs/benchmarks/recorded_spaces.md, "Plain Optuna
    studies", compares them.
    """

    model: FailureKind = "auto"
    weighting: Weighting = "auto"

    def __post_init__(self) -> None:
        if self.model not in _KINDS:
            raise ValueError(f"GPUCBSampler: failures.model: expected one of {list(_KINDS)}, "
                             f"got {self.model!r}")
        if self.weighting not in _WEIGHTINGS:
            raise ValueError(f"GPUCBSampler: failures.weighting: expected one of "
                             f"{list(_WEIGHTINGS)}, got {self.weighting!r}")
        if self.model == "off" and self.weighting != "auto":
            raise ValueError(f"GPUCBSampler: failures.weighting: expected 'auto' with model "
                             f"'off' (nothing to weigh), got {self.weighting!r}")

    def resolve(self, plain_discrete: bool) -> ResolvedFailures | None:
        """The model and weighting for a space (None: "off"). ``plain_discrete``: the
        space is a plain study's of int and categorical parameters only."""
        if self.model == "off":
            return None
        model = self.model
        if model == "auto":
            model = "halfspaces" if plain_discrete else "vote"
        weighting = self.weighting
        if weighting == "auto":
            weighting = "chance" if model == "halfspaces" else "success"
        return ResolvedFailures(model, weighting)


@dataclass(frozen=True)
class ModelSettings:
    """The GP's targets, inputs and refits.

    ``target_transform``: "copula" (normal scores of the ranks: robust to the slow
    tail of tuning spaces) or "log" (standardised log-throughput); see ``_targets``.
    ``floor_quantile``: completed values below this quantile are raised to it before
    the GP sees them (None: untouched). ``refit_every``: fit the hyperparameters when
    the number of completed trials is a multiple of this (in between, reuse the last
    ones; the posterior is still conditioned on every trial); None (default): every
    suggestion below 300 completed trials, then each time the study has grown by 2%
    (every 6th at 300, every 20th at 1,000; decisions 0004 and 0043). ``tiling_features``: for a
    GEMM tiling space whose workload is given, the tile fit (padding, wave
    quantisation) as extra GP inputs (``_tiling_features``).
    """

    target_transform: TargetTransform = "copula"
    floor_quantile: float | None = None
    refit_every: int | None = None
    tiling_features: bool = True

    def __post_init__(self) -> None:
        if self.target_transform not in TRANSFORMS:
            raise ValueError(f"GPUCBSampler: model.target_transform: expected one of "
                             f"{TRANSFORMS}, got {self.target_transform!r}")
        if self.floor_quantile is not None and not 0.0 <= self.floor_quantile < 1.0:
            raise ValueError(f"GPUCBSampler: model.floor_quantile: expected None or in [0, 1), "
                             f"got {self.floor_quantile}")
        if self.refit_every is not None and self.refit_every < 1:
            raise ValueError(f"GPUCBSampler: model.refit_every: expected None or >= 1, "
                             f"got {self.refit_every}")


@dataclass(frozen=True)
class SearchSettings:
    """Where the acquisition is maximised, and how exploration grows.

    ``beta_schedule``: None (constant ``beta``) or "srinivas" (GP-UCB's growing beta,
    scaled). ``enumerate_limit``: feasible-set size above which a sampled pool of
    ``pool_size`` uniform feasible configs (plus neighbours of the best) replaces
    enumeration. ``local_patience``: None (default): UCB is always global; a number:
    once the best has not improved for this many completed trials, every other
    suggestion maximises the acquisition only over the configs at most
    ``local_radius`` moves (``_local.near_any``) from one of the five best measured;
    it helps where a parameter matters only near the best (the recorded convolution
    space) and costs measurements where global UCB still finds better basins (the
    recorded GEMM spaces); 5 is the setting measured
    (docs/decisions/0020-gp-ucb-coordinate-search-when-stalled.md).
    ``incumbent_flips``: past the start, propose the best measured config with one
    categorical parameter changed (each other choice in turn) while such a config is
    unmeasured, up to a quarter of the measurements: a GP whose start saw a category
    only beside poor settings rates it by them (off by default: the cpu study's
    winners reach the fast flags' basin in 18 of 20 runs with it, 12 of 20 without; the
    simulator's spaces are level at 100 measurements and may lose 0.6-4.7% at 25-50,
    docs/benchmarks/certified_winners.md).
    ``float_grid_points``: values standing for each float parameter of a plain study.
    ``fast_from``: from this many completed trials (default 300) a suggestion costs
    less two ways: the exact posterior std is computed only for the candidates whose
    upper bound could reach the best ranked ones (``_pruned_ranking``: the same
    ranking; with the "success" weighting or no failure model, which weigh each
    candidate by its own std only), and a sampled pool's uniform part shrinks as
    ``pool_size * fast_from / n`` (``_candidates``); None: neither
    (docs/decisions/0030-gp-ucb-prior-in-the-mean.md measures both).
    """

    beta_schedule: BetaSchedule | None = None
    enumerate_limit: int = ENUMERATE_LIMIT
    pool_size: int = POOL_SIZE
    local_patience: int | None = None
    local_radius: int = LOCAL_RADIUS
    incumbent_flips: bool = False
    float_grid_points: int = FLOAT_GRID_POINTS
    fast_from: int | None = FAST_FROM

    def __post_init__(self) -> None:
        if self.fast_from is not None and self.fast_from < 1:
            raise ValueError(f"GPUCBSampler: search.fast_from: expected None or >= 1, "
                             f"got {self.fast_from}")
        if self.beta_schedule not in (None, "srinivas"):
            raise ValueError(f"GPUCBSampler: search.beta_schedule: expected None or "
                             f"'srinivas', got {self.beta_schedule!r}")
        if self.local_patience is not None and self.local_patience < 1:
            raise ValueError(f"GPUCBSampler: search.local_patience: expected None or >= 1, "
                             f"got {self.local_patience}")
        if self.local_radius < 1:
            raise ValueError(f"GPUCBSampler: search.local_radius: expected >= 1, "
                             f"got {self.local_radius}")
        if self.float_grid_points < 2:
            raise ValueError(f"GPUCBSampler: search.float_grid_points: expected >= 2, "
                             f"got {self.float_grid_points}")


@dataclass(frozen=True)
class PriorSettings:
    """How a prior (``GPUCBSampler(prior=...)``) enters the search.

    ``mechanism``: "mean" (default): the GP's mean is const + weight * the prior's
    normal score, weight and an output scale fitted with the kernel, used where its
    log posterior beats the plain GP's by log(n) (``_prior_step``); "feature": the
    prior's quantile is one more GP input, whose length scale the fit learns
    (docs/decisions/0030-gp-ucb-prior-in-the-mean.md measures both). ``top_share``:
    the first proposal is the prior's best config unless a config among this share of
    the candidates it ranks best is measured already (the baseline, a resumed run).
    ``design_share``: until the prior earns the model's trust, every other proposal of
    the space-filling start is drawn from this share of the candidates the prior ranks
    best (1: all from all candidates; ``_prior_step.prior_design_pool``).
    """

    mechanism: PriorMechanism = "mean"
    top_share: float = 0.01
    design_share: float = 0.1

    def __post_init__(self) -> None:
        if self.mechanism not in _MECHANISMS:
            raise ValueError(f"GPUCBSampler: prior_settings.mechanism: expected one of "
                             f"{list(_MECHANISMS)}, got {self.mechanism!r}")
        if not 0.0 < self.top_share <= 1.0:
            raise ValueError(f"GPUCBSampler: prior_settings.top_share: expected in (0, 1], "
                             f"got {self.top_share}")
        if not 0.0 < self.design_share <= 1.0:
            raise ValueError(f"GPUCBSampler: prior_settings.design_share: expected in "
                             f"(0, 1], got {self.design_share}")
