"""GPUCBSampler: the orchestrator (history -> design or GP + UCB -> one config).

Each call rebuilds everything from the study's trials in storage, so any
worker, a resumed study or ``aoe-optuna ask`` gets the same proposal for the
same seed and history. The only thing carried between calls is the GP's
hyperparameters, and they travel through storage too (a system attribute of
the trial they were fitted for) as the warm start and fallback of the next fit.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, Literal

import numpy as np
import torch
from optuna.distributions import (
    BaseDistribution,
    FloatDistribution,
)
from optuna.samplers import BaseSampler, RandomSampler
from optuna.samplers._base import _process_constraints_after_trial
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.samplers.claims import claim_first_free, claimed_params
from aoe_optuna.samplers.gp_ucb._acquisition import (
    DEFAULT_BETA,
    BetaSchedule,
    beta_at,
    by_feasibility,
    ucb,
)
from aoe_optuna.samplers.gp_ucb._candidates import (
    ENUMERATE_LIMIT,
    POOL_SIZE,
    Candidates,
    CandidateSource,
)
from aoe_optuna.samplers.gp_ucb._design import farthest_point
from aoe_optuna.samplers.gp_ucb._feasibility import FeasibilityModel
from aoe_optuna.samplers.gp_ucb._feasibility_halfspaces import HalfspaceFeasibility
from aoe_optuna.samplers.gp_ucb._history import History, HistoryReader
from aoe_optuna.samplers.gp_ucb._local import (
    LOCAL_ATTR,
    LOCAL_MIN_SUCCESS,
    LOCAL_RADIUS,
    is_local_step,
    local_steps_pay,
    near_any,
)
from aoe_optuna.samplers.gp_ucb._model import (
    FitError,
    Hyper,
    Posterior,
    fit_gp,
)
from aoe_optuna.samplers.gp_ucb._targets import TRANSFORMS, TargetTransform
from aoe_optuna.samplers.gp_ucb._tiling_features import GPInputs, TilingFeatures
from aoe_optuna.samplers.plain_space import PlainSpaces
from aoe_optuna.samplers.seeding import resolve_seed
from aoe_optuna.samplers.torch_threads import one_torch_thread
from aoe_optuna.samplers.value_grid import FLOAT_GRID_POINTS, snap
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile
    from aoe_optuna.workload.models import Workload

_log = logging.getLogger(__name__)

FeasibilityWeighting = Literal["auto", "success", "chance", "gain"]
FeasibilityKind = Literal["auto", "vote", "halfspaces"]
HYPER_ATTR = "gp_ucb:hyper"  # trial system attr: the GP hyperparameters fitted for it
N_INCUMBENTS = 5
RANKED = 16  # best candidates kept in order, for when other workers claimed the first
# L-BFGS iterations: a warm start continues from the previous trial's optimum, so a few
# steps per suggestion keep it converged; a cold fit (the first one) gets more.
WARM_MAX_ITER = 10
COLD_MAX_ITER = 100
# Hyperparameters are fitted on every suggestion below REFIT_ALWAYS_BELOW completed
# trials, then on every REFIT_EVERY-th: a fit grows as n^3
# (docs/decisions/0004-gp-ucb-refit-every-suggestion.md).
REFIT_ALWAYS_BELOW = 300
REFIT_EVERY = 3


class GPUCBSampler(BaseSampler):
    """BoTorch GP + UCB over the exact feasible set of a SearchSpace.

    Args:
        space: the search space; default: the study's stored spec, else the
            cartesian product of the distributions its trials used, each float
            one a grid of ``float_grid_points`` values (``plain_space``).
        seed: makes proposals reproducible for a given history.
        n_startup_trials: configs (baseline, failures and running trials
            included) placed by the space-filling design before the GP takes over.
        beta: UCB exploration weight (mean + sqrt(beta) std) on copula targets; 9 =
            "mean + 3 std" (docs/decisions/0002-gp-ucb-beta-9-and-8-start-configs.md).
        beta_schedule: None (constant beta) or "srinivas" (GP-UCB's growing beta, scaled).
        use_feasibility_model: weight the acquisition by P(success) learned from
            FAIL trials; False leaves failures out of the model (only never repeated).
        feasibility_model: how P(success) is learned. "vote": outcomes of nearby
            configs vote (``_feasibility``); "halfspaces": an AND of halfspaces in
            the log2 encoding (``_feasibility_halfspaces``), which learns tiling
            rules such as divisibility that split neighbouring configs. "auto"
            (default): "vote" with a spec, whose rules are already in the space and
            whose failures are rare and irregular; "halfspaces" on a plain study
            of int and categorical parameters, whose failures are the rules no spec
            stated; "vote" where a plain study has float parameters.
        feasibility_weighting: how P(success) weights UCB. "auto" (default):
            "chance" with the halfspaces model, "success" with the vote. "chance":
            the best UCB among configs with P(success) >= 0.5, a chance constraint
            that needs the calibrated P of the halfspaces. "success": P * (UCB - a
            floor below every UCB), which keeps to configs likely to run. "gain":
            P * max(UCB - best predicted mean, 0), as constrained EI weights its
            improvement, which searches through configs that fail: for studies
            where a failed trial costs little (a config rejected before it is
            built). docs/BENCHMARKS.md, "Plain Optuna studies", compares them.
        enumerate_limit: feasible-set size above which a sampled pool replaces enumeration.
        pool_size: uniform feasible samples in that pool (plus neighbours of the best).
        refit_every: fit the hyperparameters when the number of completed trials is a
            multiple of this (or none are stored yet); in between, reuse the last ones
            (the posterior is still conditioned on every trial). None (default): every
            suggestion below 300 completed trials, every 3rd after
            (docs/decisions/0004-gp-ucb-refit-every-suggestion.md).
        floor_quantile: completed values below this quantile are raised to it before
            the GP sees them (None: untouched).
        local_patience: None (default): UCB is always global. A number: once the best
            has not improved for this many completed trials, every other suggestion
            maximises the acquisition only over the configs at most ``local_radius``
            moves (``_local.near_any``) from one of the five best measured. It helps
            where a parameter matters only near the best (the recorded convolution
            space) and costs measurements where global UCB still finds better basins
            (the recorded GEMM spaces); 5 (``_local.LOCAL_PATIENCE``) is the setting
            measured (docs/decisions/0020-gp-ucb-coordinate-search-when-stalled.md).
        local_radius: see ``local_patience``.
        target_transform: "copula" (normal scores of the ranks: robust to the slow
            tail of tuning spaces) or "log" (standardised log-throughput); see ``_targets``.
        tiling_features: for a GEMM tiling space whose workload is known, give the GP
            the tile fit (padding, wave quantisation) as extra inputs (``_tiling_features``).
        workload, profile: the workload and SoC for those features; by default read
            from the spec stored in the study (a profile only for the simulator and npu
            backends: the CPU kernel does not run on the SoC's cube cores).
        float_grid_points: values standing for each float parameter of a plain study.
        constraints_func: as Optuna's samplers take it: the constraint values of a
            finished trial (feasible when all are <= 0), stored with the trial. A
            completed trial that breaks a constraint, given here or by
            ``Trial.set_constraint``, still trains the objective's GP, counts as a
            failure for P(success) (so UCB is weighted by the chance of being
            feasible, as Optuna's GPSampler weights its acquisition) and is never an
            incumbent.
    """

    def __init__(
        self,
        *,
        space: SearchSpace | None = None,
        seed: int | None = None,
        n_startup_trials: int = 8,
        beta: float = DEFAULT_BETA,
        beta_schedule: BetaSchedule | None = None,
        use_feasibility_model: bool = True,
        feasibility_weighting: FeasibilityWeighting = "auto",
        feasibility_model: FeasibilityKind = "auto",
        enumerate_limit: int = ENUMERATE_LIMIT,
        pool_size: int = POOL_SIZE,
        refit_every: int | None = None,
        floor_quantile: float | None = None,
        local_patience: int | None = None,
        local_radius: int = LOCAL_RADIUS,
        target_transform: TargetTransform = "copula",
        tiling_features: bool = True,
        workload: Workload | None = None,
        profile: SocProfile | None = None,
        float_grid_points: int = FLOAT_GRID_POINTS,
        constraints_func: Callable[[FrozenTrial], Sequence[float]] | None = None,
    ) -> None:
        if n_startup_trials < 1:
            raise ValueError(f"n_startup_trials: expected >= 1, got {n_startup_trials}")
        if beta < 0:
            raise ValueError(f"beta: expected >= 0, got {beta}")
        if local_patience is not None and local_patience < 1:
            raise ValueError(f"local_patience: expected None or >= 1, got {local_patience}")
        if local_radius < 1:
            raise ValueError(f"local_radius: expected >= 1, got {local_radius}")
        if refit_every is not None and refit_every < 1:
            raise ValueError(f"refit_every: expected None or >= 1, got {refit_every}")
        if floor_quantile is not None and not 0.0 <= floor_quantile < 1.0:
            raise ValueError(f"floor_quantile: expected None or in [0, 1), got {floor_quantile}")
        if feasibility_weighting not in ("auto", "success", "chance", "gain"):
            raise ValueError(f"feasibility_weighting: expected 'auto', 'success', 'chance' "
                             f"or 'gain', got {feasibility_weighting!r}")
        if feasibility_model not in ("auto", "vote", "halfspaces"):
            raise ValueError(f"feasibility_model: expected 'auto', 'vote' or 'halfspaces', "
                             f"got {feasibility_model!r}")
        if float_grid_points < 2:
            raise ValueError(f"float_grid_points: expected >= 2, got {float_grid_points}")
        beta_at(1, 1, beta, beta_schedule)  # validates the schedule name
        if target_transform not in TRANSFORMS:
            raise ValueError(
                f"target_transform: expected one of {TRANSFORMS}, got {target_transform!r}"
            )
        self._space = space
        self._seed = resolve_seed(seed, "GPUCBSampler")
        self.n_startup_trials = n_startup_trials
        self.beta = beta
        self.beta_schedule = beta_schedule
        self.use_feasibility_model = use_feasibility_model
        self.feasibility_weighting = feasibility_weighting
        self.feasibility_model = feasibility_model
        self._enumerate_limit = enumerate_limit
        self._pool_size = pool_size
        self.refit_every = refit_every
        self.floor_quantile = floor_quantile
        self.local_patience = local_patience
        self.local_radius = local_radius
        self.target_transform = target_transform
        self.tiling_features = tiling_features
        self._workload = workload
        self._profile = profile
        self.float_grid_points = float_grid_points
        self._constraints_func = constraints_func
        self._inputs: dict[int, GPInputs] = {}
        self._independent = RandomSampler(seed=self._seed)
        self._sources: dict[int, CandidateSource] = {}
        self._histories: dict[int, HistoryReader] = {}
        self._spaces: dict[Any, SearchSpace] = {}
        self._plain = PlainSpaces(float_grid_points)

    # ------------------------------------------------------------------ space
    def _space_for(self, study: Study) -> SearchSpace | None:
        if self._space is not None:
            return self._space
        key = ("spec", id(study._storage), study._study_id)
        if key not in self._spaces:
            stored = _stored_space(study)
            if stored is not None:
                self._spaces[key] = stored
        if key in self._spaces:
            return self._spaces[key]
        plain = self._plain(study)
        return None if plain is None else plain.space

    def _plain_distributions(self, study: Study, space: SearchSpace) -> dict | None:
        """The study's own distributions where ``space`` was inferred from them."""
        plain = self._plain(study)
        return plain.distributions if plain is not None and plain.space is space else None

    def _halfspaces(self, study: Study, space: SearchSpace) -> bool:
        """Whether P(success) is the AND of halfspaces (``feasibility_model``).

        "auto" takes them on a plain study of discrete parameters only: there the
        failures are tiling rules on sizes. An AND of halfspaces is one convex
        region and rates what lies beyond it as failing, unexplored or not; a
        continuous constraint need not be convex (Gardner's toy problem is
        feasible in two bands of x + y, and the halfspaces never found the second).
        """
        if self.feasibility_model == "auto":
            dists = self._plain_distributions(study, space)
            return dists is not None and not any(
                isinstance(d, FloatDistribution) for d in dists.values())
        return self.feasibility_model == "halfspaces"

    def _inputs_for(self, study: Study, space: SearchSpace) -> GPInputs:
        """The GP's input encoding of ``space`` (tiling features when the workload is known)."""
        if id(space) not in self._inputs:
            tiling = None
            if self.tiling_features:
                workload, profile = self._workload, self._profile
                if workload is None or profile is None:
                    spec = _stored_spec(study)
                    if spec is not None:
                        workload = spec.workload
                        # the SoC's cores only count where the kernel runs on the SoC
                        profile = spec.profile if spec.kernel_runs_on_soc else None
                if workload is not None:
                    cores = profile.cube_cores if profile is not None else None
                    tiling = TilingFeatures.for_space(space, workload.gemms, cores)
            self._inputs[id(space)] = GPInputs(space, tiling)
        return self._inputs[id(space)]

    def _source(self, space: SearchSpace, inputs: GPInputs) -> CandidateSource:
        if id(space) not in self._sources:
            self._sources[id(space)] = CandidateSource(
                space, self._enumerate_limit, self._pool_size, encode=inputs
            )
        return self._sources[id(space)]

    # ------------------------------------------------------- BaseSampler API
    def infer_relative_search_space(
        self, study: Study, trial: FrozenTrial
    ) -> dict[str, BaseDistribution]:
        space = self._space_for(study)
        if space is None:
            return {}
        return self._plain_distributions(study, space) or space.distributions()

    def sample_relative(
        self, study: Study, trial: FrozenTrial, search_space: dict[str, BaseDistribution]
    ) -> dict[str, Any]:
        space = self._space_for(study)
        if space is None or not search_space:
            return {}
        if set(space.names) <= set(claimed_params(trial)):
            return {}  # an enqueued trial (the baseline): its params are fixed
        trials = study.get_trials(deepcopy=False)
        if id(space) not in self._histories:
            self._histories[id(space)] = HistoryReader(space)
        history = self._histories[id(space)](study, exclude_number=trial.number, trials=trials)
        rng = np.random.default_rng([self._seed, trial.number])
        inputs = self._inputs_for(study, space)
        cands = self._source(space, inputs).unseen(
            history.seen, rng, history.incumbents(N_INCUMBENTS)
        )
        if cands.rows.shape[0] == 0:
            _log.warning("every feasible config has been tried; falling back to random")
            return {}
        with torch.random.fork_rng(), one_torch_thread():
            torch.manual_seed(self._seed + trial.number)
            ranked, hyper, local = self._choose(
                inputs, history, cands, rng, _previous_hyper(trials),
                self.local_patience is not None and _local_steps_pay(trials),
                halfspaces=self._halfspaces(study, space),
            )
        if hyper is not None:
            study._storage.set_trial_system_attr(trial._trial_id, HYPER_ATTR, hyper)
        if local:
            study._storage.set_trial_system_attr(trial._trial_id, LOCAL_ATTR, True)
        # Another worker may be proposing at this very moment from the same history:
        # claim the best config no live trial holds (see aoe_optuna.samplers.claims).
        config = claim_first_free(study, trial, (space.config(cands.rows[i]) for i in ranked))
        if config is None:
            return {}
        # a wrapper (PartialFixedSampler) may ask for fewer parameters than the space has
        return {k: v for k, v in config.items() if k in search_space}

    def sample_independent(
        self, study: Study, trial: FrozenTrial, param_name: str,
        param_distribution: BaseDistribution,
    ) -> Any:
        value = self._independent.sample_independent(study, trial, param_name, param_distribution)
        if isinstance(param_distribution, FloatDistribution):
            # on the grid, so that this trial is a config the GP can later read
            return snap(param_distribution, value, self.float_grid_points)
        return value

    def reseed_rng(self) -> None:
        self._independent.reseed_rng()

    def after_trial(
        self, study: Study, trial: FrozenTrial, state: TrialState, values: Sequence[float] | None
    ) -> None:
        if self._constraints_func is not None:
            _process_constraints_after_trial(self._constraints_func, study, trial, state)

    # ------------------------------------------------------------- the step
    def _refit_period(self, n_completed: int) -> int:
        """Fit on completed counts that are multiples of this (see REFIT_ALWAYS_BELOW)."""
        if self.refit_every is not None:
            return self.refit_every
        return 1 if n_completed < REFIT_ALWAYS_BELOW else REFIT_EVERY

    def _choose(
        self, encode: GPInputs, history: History, cands: Candidates,
        rng: np.random.Generator, previous: Hyper | None, local_allowed: bool = True,
        halfspaces: bool = False,
    ) -> tuple[np.ndarray, Hyper | None, bool]:
        """Indices into ``cands``, best first, the hyperparameters fitted for them, and
        whether this was a local step (``_local``). ``halfspaces``: which P(success)
        model (see ``feasibility_model``)."""
        space = encode.space
        used_x = encode(np.concatenate([history.completed, history.failed, history.pending]))
        n_startup = self.n_startup_trials
        if history.n_used < n_startup or history.completed.shape[0] < 2:
            return _then_random(farthest_point(cands, used_x, rng), cands, rng), None, False
        x = encode(history.completed)
        try:
            n = history.completed.shape[0]
            warm_iter = WARM_MAX_ITER if n % self._refit_period(n) == 0 else 0
            y = history.targets(self.floor_quantile, self.target_transform)
            fit = fit_gp(x, y, previous, warm_iter, COLD_MAX_ITER)
        except FitError as exc:
            _log.warning("%s; this suggestion is space-filling", exc)
            return _then_random(farthest_point(cands, used_x, rng), cands, rng), None, False
        post = Posterior(fit).condition_on_pending(fit, encode(history.pending))
        mean, std = post.predict(cands.x)
        t = history.completed.shape[0] - n_startup + 1
        beta = beta_at(t, space.n_feasible, self.beta, self.beta_schedule)
        score = ucb(mean, std, beta)
        p_success = None
        if self.use_feasibility_model:
            x_ok, x_failed = encode(history.completed_ok), encode(history.all_failed)
            feas = (HalfspaceFeasibility.fit(x_ok, x_failed, rng) if halfspaces
                    else FeasibilityModel.fit(x_ok, x_failed))
            p_success = None if feas is None else feas.predict(cands.x)
            if p_success is not None:
                weighting = self.feasibility_weighting
                if weighting == "auto":
                    weighting = "chance" if halfspaces else "success"
                score = by_feasibility(score, p_success, weighting, mean, std, beta)
        targets = history.feasible_targets()
        is_local = False
        if (local_allowed and is_local_step(targets, self.local_patience)
                and history.feasible_mask.any()):
            local = near_any(space, cands.rows, history.incumbents(N_INCUMBENTS),
                             self.local_radius)
            if p_success is not None:
                local &= p_success >= LOCAL_MIN_SUCCESS
            is_local = bool(local.any())
            if is_local:  # the same acquisition, over the plateau's close configs only
                score = np.where(local, score, -np.inf)
        top = min(RANKED, score.shape[0])
        best = np.argpartition(-score, top - 1)[:top]
        return best[np.argsort(-score[best], kind="stable")], fit.hyper, is_local


def _then_random(pick: int, cands: Candidates, rng: np.random.Generator) -> np.ndarray:
    """``pick`` first, then a few other candidates in random order (claim fallbacks)."""
    others = rng.permutation(cands.rows.shape[0])[:RANKED]
    return np.concatenate([[pick], others[others != pick]])


def _local_steps_pay(trials: Sequence[FrozenTrial]) -> bool:
    """Whether the local steps of this study have run more often than not (``_local``)."""
    done = [t.state for t in trials if t.system_attrs.get(LOCAL_ATTR)]
    return local_steps_pay(done.count(TrialState.COMPLETE), done.count(TrialState.FAIL))


def _previous_hyper(trials: Sequence[FrozenTrial]) -> Hyper | None:
    for t in reversed(trials):
        hyper = t.system_attrs.get(HYPER_ATTR)
        if hyper is not None:
            return hyper
    return None


def _stored_space(study: Study) -> SearchSpace | None:
    spec = _stored_spec(study)
    return None if spec is None else spec.space


def _stored_spec(study: Study) -> Any:
    try:
        from aoe_optuna.spec.stored import stored_spec
    except ImportError:  # the spec loader is not installed in this checkout
        return None
    return stored_spec(study)

