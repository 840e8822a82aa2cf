"""GPUCBSampler: the orchestrator (history -> design or GP + UCB -> one config).

Each call rebuilds everything from the study's trials in storage, so any
worker, a resumed study or ``aoe-optuna ask`` gets the same proposal for the
same seed and history. The only thing carried between calls is the GP's
hyperparameters, and they travel through storage too (a system attribute of
the trial they were fitted for) as the warm start and fallback of the next fit.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from optuna.distributions import BaseDistribution, FloatDistribution
from optuna.study import Study
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import (
    GP_FITTED_AT_ATTR,
    GP_FLIP_ATTR,
    GP_HYPER_ATTR,
    GP_LOCAL_ATTR,
    GP_PRIOR_ATTR,
)
from aoe_optuna.samplers.base import ConstrainedSampler, ConstraintsFunc, serialized
from aoe_optuna.samplers.claims import claim_first_free, claimed_params
from aoe_optuna.samplers.gp_ucb._acquisition import (
    DEFAULT_BETA,
    beta_at,
    by_feasibility,
    success_floor,
    ucb,
    weighted_by_success,
)
from aoe_optuna.samplers.gp_ucb._candidates import Candidates, CandidateSource, pool_size_at
from aoe_optuna.samplers.gp_ucb._design import farthest_point
from aoe_optuna.samplers.gp_ucb._feasibility import FeasibilityModel
from aoe_optuna.samplers.gp_ucb._feasibility_halfspaces import HalfspaceFeasibility
from aoe_optuna.samplers.gp_ucb._history import History, HistoryReader
from aoe_optuna.samplers.gp_ucb._local import (
    LOCAL_MIN_SUCCESS,
    is_local_step,
    local_steps_pay,
    near_any,
)
from aoe_optuna.samplers.gp_ucb._prior_scores import PriorScores
from aoe_optuna.samplers.gp_ucb._pruned_ranking import CandidateModel, best_first
from aoe_optuna.samplers.gp_ucb._tiling_features import GPInputs, TilingFeatures
from aoe_optuna.samplers.gp_ucb.settings import (
    FailureModel,
    ModelSettings,
    PriorSettings,
    ResolvedFailures,
    SearchSettings,
)
from aoe_optuna.samplers.neighbourhood import categorical_flips
from aoe_optuna.samplers.plain_space import PlainSpace, PlainSpaces
from aoe_optuna.samplers.priors.base import ConfigPrior, PriorArgument, as_prior
from aoe_optuna.samplers.settings import settings_of
from aoe_optuna.samplers.value_grid import snap
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile
    from aoe_optuna.samplers.gp_ucb._model import Hyper
    from aoe_optuna.spec.loader import StudySpec
    from aoe_optuna.workload.gemm import Workload

_log = logging.getLogger(__name__)

N_INCUMBENTS = 5
RANKED = 16  # best candidates kept in order, for when other workers claimed the first
# L-BFGS iterations: a warm start continues from the previous trial's optimum, so a few
# steps per suggestion keep it converged; a cold fit (the first one) gets more.
WARM_MAX_ITER = 10
COLD_MAX_ITER = 100
# Hyperparameters are fitted on every suggestion below REFIT_ALWAYS_BELOW completed
# trials (docs/decisions/0004-gp-ucb-refit-every-suggestion.md), then each time the
# study has grown by 1/REFIT_GROWTH since (every REFIT_EVERY-th at least): a fit grows
# as n^3 while one more trial moves the hyperparameters by about 1/n
# (docs/decisions/0043-gp-ucb-refits-as-the-study-grows.md).
REFIT_ALWAYS_BELOW = 300
REFIT_EVERY = 3
REFIT_GROWTH = 50


class GPUCBSampler(ConstrainedSampler):
    """BoTorch GP + UCB over the exact feasible set of a SearchSpace.

    Args:
        space: the search space; default: the study's stored spec, else the
            cartesian product of the distributions its trials used, each float
            one a grid of ``search.float_grid_points`` values (``plain_space``).
        seed: makes proposals reproducible for a given history.
        n_startup_trials: configs (baseline, failures and running trials
            included) placed by the space-filling design before the GP takes over.
        beta: UCB exploration weight (mean + sqrt(beta) std) on copula targets; 9 =
            "mean + 3 std" (docs/decisions/0002-gp-ucb-beta-9-and-8-start-configs.md).
        failures: how failed trials weigh on the acquisition: a :class:`FailureModel`,
            a mapping of its fields, or its ``model`` name ("auto", "vote",
            "halfspaces", "off").
        model: the GP's :class:`ModelSettings` (targets, refits, tiling features), or
            a mapping of its fields.
        search: :class:`SearchSettings` (beta schedule, candidate pool, local phase,
            float grid), or a mapping of its fields.
        workload, profile: the workload, and the SoC its kernel runs on (None where
            it does not: the CPU kernel), for the tiling features of a GEMM tiling
            space. Without a workload they are off, and a warning says so;
            :meth:`from_spec` passes both as aoe-tune does.
        constraints_func: as Optuna's samplers take it: the constraint values of a
            finished trial (feasible when all are <= 0), stored with the trial. A
            completed trial that breaks a constraint, given here or by
            ``Trial.set_constraint``, still trains the objective's GP, counts as a
            failure for P(success) (so UCB is weighted by the chance of being
            feasible, as Optuna's GPSampler weights its acquisition) and is never an
            incumbent.
        prior: what the project already knows of the objective: a
            :class:`~aoe_optuna.samplers.priors.ConfigPrior` (another device's recording,
            another study, the simulator) or a function of a config returning its
            predicted value (the study's direction and units, or any monotone map of
            them: only the order counts). It enters the GP's mean with a weight fitted
            to the measurements, so a misleading prior loses its weight
            (docs/decisions/0030-gp-ucb-prior-in-the-mean.md).
        prior_settings: :class:`PriorSettings` (mechanism, start-up with a prior), or
            a mapping of its fields.
    """

    def __init__(
        self,
        *,
        space: SearchSpace | None = None,
        seed: int | None = None,
        n_startup_trials: int = 8,
        beta: float = DEFAULT_BETA,
        failures: FailureModel | Mapping[str, Any] | str | None = None,
        model: ModelSettings | Mapping[str, Any] | None = None,
        search: SearchSettings | Mapping[str, Any] | None = None,
        workload: Workload | None = None,
        profile: SocProfile | None = None,
        constraints_func: ConstraintsFunc | None = None,
        prior: PriorArgument | None = None,
        prior_settings: PriorSettings | Mapping[str, Any] | None = None,
    ) -> None:
        if n_startup_trials < 1:
            raise ValueError(f"n_startup_trials: expected >= 1, got {n_startup_trials}")
        if beta < 0:
            raise ValueError(f"beta: expected >= 0, got {beta}")
        if isinstance(failures, str):
            failures = {"model": failures}
        self.failures = settings_of(FailureModel, failures, "GPUCBSampler: failures")
        self.model = settings_of(ModelSettings, model, "GPUCBSampler: model")
        self.search = settings_of(SearchSettings, search, "GPUCBSampler: search")
        self.prior: ConfigPrior | None = as_prior(prior)
        self.prior_settings = settings_of(PriorSettings, prior_settings,
                                          "GPUCBSampler: prior_settings")
        super().__init__("GPUCBSampler", seed, constraints_func)
        self._space = space
        self.n_startup_trials = n_startup_trials
        self.beta = beta
        self._workload = workload
        self._profile = profile
        self._inputs: dict[int, GPInputs] = {}
        self._resolved: dict[int, ResolvedFailures | None] = {}
        self._sources: dict[int, CandidateSource] = {}
        self._histories: dict[int, HistoryReader] = {}
        self._prior_scores: dict[int, PriorScores] = {}
        self._noted: dict[int, np.ndarray] = {}
        self._trust: dict[str, Any] | None = None
        # the completed trials the hyperparameters were last fitted on: before a step, as
        # the study stores it; after, as the step leaves it (``_refit_due``)
        self._fitted_at: int | None = None
        self._flips = 0  # proposals that were the incumbent with one category changed
        self._flipped = False
        self._plain = PlainSpaces(self.search.float_grid_points)

    @classmethod
    def from_spec(cls, spec: StudySpec, **options: Any) -> GPUCBSampler:
        """The sampler aoe-tune builds for ``spec``: its space, its workload, and its SoC
        where the kernel runs on the SoC's cube cores (not the CPU kernel)."""
        return cls(space=spec.space, workload=spec.workload,
                   profile=spec.profile if spec.kernel_runs_on_soc else None, **options)

    # ------------------------------------------------------------------ space
    def _space_for(self, study: Study) -> SearchSpace | None:
        if self._space is not None:
            return self._space
        stored = self._stored_space(study)
        if stored is not None:
            return stored
        plain = self._plain(study)
        return None if plain is None else plain.space

    def _plain_space(self, study: Study) -> PlainSpace | None:
        return self._plain(study)

    def _failures_for(self, study: Study, space: SearchSpace) -> ResolvedFailures | None:
        """The failure model of ``space``, "auto" resolved once (:meth:`FailureModel.resolve`).

        "auto" takes the halfspaces on a plain study of discrete parameters only: there
        the failures are tiling rules on sizes. An AND of halfspaces is one convex
        region and rates what lies beyond it as failing, unexplored or not; a
        continuous constraint need not be convex (Gardner's toy problem is
        feasible in two bands of x + y, and the halfspaces never found the second).
        """
        if id(space) not in self._resolved:
            dists = self._plain_distributions(study, space)
            plain_discrete = dists is not None and not any(
                isinstance(d, FloatDistribution) for d in dists.values())
            self._resolved[id(space)] = self.failures.resolve(plain_discrete)
        return self._resolved[id(space)]

    def _inputs_for(self, space: SearchSpace) -> GPInputs:
        """The GP's input encoding of ``space`` (tiling features when the workload is given)."""
        if id(space) not in self._inputs:
            tiling = None
            if self.model.tiling_features:
                if self._workload is None:
                    self._warn_without_workload(space, "the GP's tiling features")
                else:
                    cores = self._profile.cube_cores if self._profile is not None else None
                    tiling = TilingFeatures.for_space(space, self._workload.gemms, cores)
            self._inputs[id(space)] = GPInputs(space, tiling)
        return self._inputs[id(space)]

    def _scores_for(self, space: SearchSpace, source: CandidateSource,
                    maximize: bool) -> PriorScores | None:
        """The prior's normal scores on ``space`` (None without a prior)."""
        if self.prior is None:
            return None
        if id(space) not in self._prior_scores:
            rows = source.enumerated_rows() if source.exact else None
            self._prior_scores[id(space)] = PriorScores.for_space(
                self.prior, space, maximize, rows, self._seed)
        return self._prior_scores[id(space)]

    def _noted_rows(self, space: SearchSpace) -> np.ndarray | None:
        """The configs the prior names, where it names any (a knowledge base's winners):
        candidates however the pool is drawn."""
        noted = getattr(self.prior, "noted_rows", None)
        if noted is None:
            return None
        if id(space) not in self._noted:
            self._noted[id(space)] = noted(space)
        return self._noted[id(space)]

    def _source(self, space: SearchSpace, inputs: GPInputs) -> CandidateSource:
        if id(space) not in self._sources:
            self._sources[id(space)] = CandidateSource(
                space, self.search.enumerate_limit, self.search.pool_size, encode=inputs
            )
        return self._sources[id(space)]

    # ------------------------------------------------------- BaseSampler API
    @serialized
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
        inputs = self._inputs_for(space)
        source = self._source(space, inputs)
        pool = pool_size_at(self.search.pool_size, history.completed.shape[0],
                            self.search.fast_from)
        cands = source.unseen(history.seen, rng, history.incumbents(N_INCUMBENTS), pool,
                              self._noted_rows(space))
        if cands.rows.shape[0] == 0:
            _log.warning("every feasible config has been tried; falling back to random")
            return {}
        scores = self._scores_for(space, source, history.maximize)
        self._fitted_at = _previous_fitted_at(trials)
        self._flips = sum(1 for t in trials if t.system_attrs.get(GP_FLIP_ATTR))
        self._flipped = False
        ranked, hyper, local = self._choose(
            inputs, history, cands, rng, _previous_hyper(trials),
            self.search.local_patience is not None and _local_steps_pay(trials),
            failures=self._failures_for(study, space), scores=scores,
            previous_prior=_previous_prior_hyper(trials), torch_seed=self._seed + trial.number,
        )
        if hyper is not None:
            study._storage.set_trial_system_attr(trial._trial_id, GP_HYPER_ATTR, hyper)
            if self._fitted_at is not None:
                study._storage.set_trial_system_attr(trial._trial_id, GP_FITTED_AT_ATTR,
                                                     self._fitted_at)
        if self._trust is not None:
            study._storage.set_trial_system_attr(trial._trial_id, GP_PRIOR_ATTR, self._trust)
        if local:
            study._storage.set_trial_system_attr(trial._trial_id, GP_LOCAL_ATTR, True)
        if self._flipped:
            study._storage.set_trial_system_attr(trial._trial_id, GP_FLIP_ATTR, True)
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
            return snap(param_distribution, value, self.search.float_grid_points)
        return value

    # ------------------------------------------------------------- the step
    def _refit_due(self, n_completed: int, fitted_at: int | None) -> bool:
        """Whether this step fits the hyperparameters: on ``n_completed`` trials, where
        they were last fitted on ``fitted_at`` (None: never, or by a version that did
        not say). Read from the study, so that workers sharing it fit in turn."""
        if self.model.refit_every is not None:
            return n_completed % self.model.refit_every == 0
        if n_completed < REFIT_ALWAYS_BELOW or fitted_at is None:
            return True
        return n_completed - fitted_at >= max(REFIT_EVERY, fitted_at // REFIT_GROWTH)

    def _choose(
        self, encode: GPInputs, history: History, cands: Candidates,
        rng: np.random.Generator, previous: Hyper | None, local_allowed: bool = True,
        failures: ResolvedFailures | None = None, scores: PriorScores | None = None,
        previous_prior: Any = None, torch_seed: int = 0,
    ) -> tuple[np.ndarray, Hyper | None, bool]:
        """Indices into ``cands``, best first, the hyperparameters fitted for them, and
        whether this was a local step (``_local``). ``failures``: how P(success) is
        learned and weighs (None: not at all). ``scores``: the prior's, if any
        (``_prior_step``); what the model makes of it is left in ``self._trust``."""
        used_rows = np.concatenate([history.completed, history.failed, history.pending])
        used_x = encode(used_rows)
        self._trust = None
        n_startup = self.n_startup_trials
        n = history.completed.shape[0]
        design = history.n_used < n_startup or n < 2
        f_cands = None
        if scores is not None:
            from aoe_optuna.samplers.gp_ucb._prior_step import prior_first

            scores.observe(history.completed, history.values)
            f_cands = scores(cands.rows)
            first = prior_first(f_cands, scores(used_rows), self.prior_settings.top_share,
                                named=getattr(self.prior, "noted_rows", None) is not None)
            if first is not None:  # the prior's best, before anything else
                self._trust = self._guiding_start()
                return _then_random(first, cands, rng), None, False
        if design and (scores is None or n < _prior_evidence_from()
                       or self.prior_settings.mechanism == "feature"):
            if scores is not None:
                self._trust = self._guiding_start()
            return self._design_step(cands, used_x, rng, f_cands), None, False
        if self.search.incumbent_flips and not design:
            flip = self._incumbent_flip(encode.space, history, cands)
            if flip is not None:
                self._flipped = True
                return _then_random(flip, cands, rng), None, False
        return self._ranked_by_the_gp(encode, history, cands, rng, previous, local_allowed,
                                      failures, scores, previous_prior, torch_seed,
                                      used_x, design, f_cands)

    def _guiding_start(self) -> dict[str, Any]:
        """The prior record of a start proposal the prior guided: what the summary shows
        until the model has weighed the prior (then its weight and rank correlation)."""
        assert self.prior is not None
        return {"name": self.prior.name, "stage": "start"}

    def _incumbent_flip(self, space: SearchSpace, history: History,
                        cands: Candidates) -> int | None:
        """The index in ``cands`` of the best measured config with one categorical
        parameter changed, the first not yet measured (``SearchSettings.incumbent_flips``);
        None when every one was, or a quarter of the measurements were such flips."""
        best = history.incumbents(1)
        if best.shape[0] == 0 or self._flips >= max(1, history.completed.shape[0] // 4):
            return None
        flips = categorical_flips(space, best[0])
        if flips.shape[0] == 0:
            return None
        at = {int(f): i for i, f in enumerate(space.flat_id(cands.rows))}
        return next((at[int(f)] for f in space.flat_id(flips) if int(f) in at), None)

    def _design_step(self, cands: Candidates, used_x: np.ndarray, rng: np.random.Generator,
                     f_cands: np.ndarray | None) -> np.ndarray:
        """A space-filling proposal: from every candidate, or with a prior from those it
        ranks best (``PriorSettings.design_share``)."""
        pool = None
        if f_cands is not None:  # (the plain start loads none of the prior's modules)
            from aoe_optuna.samplers.gp_ucb._prior_step import prior_design_pool

            pool = prior_design_pool(f_cands, self.prior_settings.design_share,
                                     used_x.shape[0])
        if pool is None:
            return _then_random(farthest_point(cands, used_x, rng), cands, rng)
        sub = Candidates(cands.rows[pool], cands.x[pool])
        return _then_random(int(pool[farthest_point(sub, used_x, rng)]), cands, rng)

    def _ranked_by_the_gp(
        self, encode: GPInputs, history: History, cands: Candidates,
        rng: np.random.Generator, previous: Hyper | None, local_allowed: bool,
        failures: ResolvedFailures | None, scores: PriorScores | None,
        previous_prior: Any, torch_seed: int, used_x: np.ndarray, design: bool,
        f_cands: np.ndarray | None,
    ) -> tuple[np.ndarray, Hyper | None, bool]:
        """``_choose`` past the space-filling start, on one torch thread with its own seed.
        torch and BoTorch are imported here, at the first fit: a study that ends within
        its start (a short run, a refused one) never pays their ~2 s of CPU."""
        import torch

        from aoe_optuna.samplers.torch_threads import one_torch_thread

        with torch.random.fork_rng(), one_torch_thread():
            torch.manual_seed(torch_seed)
            return self._model_step(encode, history, cands, rng, previous, local_allowed,
                                    failures, scores, previous_prior, used_x, design, f_cands)

    def _model_step(
        self, encode: GPInputs, history: History, cands: Candidates,
        rng: np.random.Generator, previous: Hyper | None, local_allowed: bool,
        failures: ResolvedFailures | None, scores: PriorScores | None,
        previous_prior: Any, used_x: np.ndarray, design: bool, f_cands: np.ndarray | None,
    ) -> tuple[np.ndarray, Hyper | None, bool]:
        from aoe_optuna.samplers.gp_ucb._model import FitError, Posterior, fit_gp
        from aoe_optuna.samplers.gp_ucb._prior_step import prior_as_input, prior_in_mean, trust

        space = encode.space
        n_startup = self.n_startup_trials
        n = history.completed.shape[0]
        x = encode(history.completed)
        try:
            refit = self._refit_due(n, self._fitted_at)
            warm_iter = WARM_MAX_ITER if refit else 0
            if refit or previous is None:
                self._fitted_at = n
            y = history.targets(self.model.floor_quantile, self.model.target_transform)
            if scores is not None and self.prior_settings.mechanism == "feature":
                fitted = prior_as_input(x, scores(history.completed), y,
                                        encode(history.pending), scores(history.pending),
                                        cands.x, f_cands, previous, warm_iter, COLD_MAX_ITER)
            else:
                fit = fit_gp(x, y, previous, warm_iter, COLD_MAX_ITER)
                fitted = None
                if scores is not None:
                    fitted = prior_in_mean(fit, x, scores(history.completed), y,
                                           encode(history.pending), cands.x, f_cands,
                                           previous_prior, warm_iter, COLD_MAX_ITER)
        except FitError as exc:
            _log.warning("%s; this suggestion is space-filling", exc)
            return _then_random(farthest_point(cands, used_x, rng), cands, rng), None, False
        if fitted is not None:
            assert self.prior is not None and scores is not None
            self._trust = trust(self.prior.name, scores(history.completed), y, fitted)
            if design and not fitted.in_use:  # the design goes on until the prior earns trust
                return self._design_step(cands, used_x, rng, f_cands), None, False
        if fitted is not None and fitted.in_use:
            model, hyper = fitted.candidates, fitted.stored
        else:
            hyper = fit.hyper
            post = Posterior(fit).condition_on_pending(fit, encode(history.pending))
            model = CandidateModel(lambda: post.predict(cands.x),
                                   lambda: post.mean_and_bound(cands.x),
                                   lambda idx: post.std(cands.x[idx]))
        fast_from = self.search.fast_from
        prune = (fast_from is not None and n >= fast_from
                 and (failures is None or failures.weighting == "success"))
        # pruned: ``std`` is an upper bound of each std, exact ones are made as needed
        mean, std = model.mean_and_bound() if prune else model.predict()
        t = history.completed.shape[0] - n_startup + 1
        beta = beta_at(t, space.n_feasible, self.beta, self.search.beta_schedule)
        score = ucb(mean, std, beta)
        p_success = None
        if failures is not None:
            x_ok, x_failed = encode(history.completed_ok), encode(history.all_failed)
            feas = (HalfspaceFeasibility.fit(x_ok, x_failed, rng)
                    if failures.model == "halfspaces" else FeasibilityModel.fit(x_ok, x_failed))
            p_success = None if feas is None else feas.predict(cands.x)
            if p_success is not None:
                score = by_feasibility(score, p_success, failures.weighting, mean, std, beta)
        targets = history.feasible_targets()
        is_local = False
        local = np.ones(0, dtype=bool)
        if (local_allowed and is_local_step(targets, self.search.local_patience)
                and history.feasible_mask.any()):
            local = near_any(space, cands.rows, history.incumbents(N_INCUMBENTS),
                             self.search.local_radius)
            if p_success is not None:
                local &= p_success >= LOCAL_MIN_SUCCESS
            is_local = bool(local.any())
            if is_local:  # the same acquisition, over the plateau's close configs only
                score = np.where(local, score, -np.inf)
        if prune:
            floor = success_floor(mean, std, beta)  # the bounds' floor is the exact one's

            def score_of(idx: np.ndarray, s: np.ndarray) -> np.ndarray:
                value = ucb(mean[idx], s, beta)
                if p_success is not None:
                    value = weighted_by_success(value, p_success[idx], floor)
                return np.where(local[idx], value, -np.inf) if is_local else value

            best, _ = best_first(score_of, std, model.std, RANKED)
            return best, hyper, is_local
        top = min(RANKED, score.shape[0])
        best = np.argpartition(-score, top - 1)[:top]
        return best[np.argsort(-score[best], kind="stable")], hyper, is_local


def _prior_evidence_from() -> int:
    from aoe_optuna.samplers.gp_ucb._prior_step import PRIOR_EVIDENCE_FROM

    return PRIOR_EVIDENCE_FROM


def _then_random(pick: int, cands: Candidates, rng: np.random.Generator) -> np.ndarray:
    """``pick`` first, then a few other candidates in random order (claim fallbacks)."""
    others = rng.permutation(cands.rows.shape[0])[:RANKED]
    return np.concatenate([[pick], others[others != pick]])


def _local_steps_pay(trials: Sequence[FrozenTrial]) -> bool:
    """Whether the local steps of this study have run more often than not (``_local``)."""
    done = [t.state for t in trials if t.system_attrs.get(GP_LOCAL_ATTR)]
    return local_steps_pay(done.count(TrialState.COMPLETE), done.count(TrialState.FAIL))


def _previous_prior_hyper(trials: Sequence[FrozenTrial]) -> Any:
    """The prior-mean GP's hyperparameters of the latest trial that stored them."""
    for t in reversed(trials):
        record = t.system_attrs.get(GP_PRIOR_ATTR)
        if isinstance(record, dict) and "hyper" in record:
            return record["hyper"]
    return None


def _previous_fitted_at(trials: Sequence[FrozenTrial]) -> int | None:
    """The completed trials the latest stored hyperparameters were fitted on."""
    for t in reversed(trials):
        if t.system_attrs.get(GP_HYPER_ATTR) is not None:
            at = t.system_attrs.get(GP_FITTED_AT_ATTR)
            return at if isinstance(at, int) else None
    return None


def _previous_hyper(trials: Sequence[FrozenTrial]) -> Hyper | None:
    for t in reversed(trials):
        hyper = t.system_attrs.get(GP_HYPER_ATTR)
        if hyper is not None:
            return hyper
    return None

