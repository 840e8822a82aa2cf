"""ReplayBackend: serve measurements from a recorded Kernel Tuner cache file.

Every configuration of a real kernel's space was compiled and timed once on a
real GPU; replaying the file answers "what would this sampler have found after
N measurements?" on a landscape nobody here made up.

* Space: the file's varying parameters (values as recorded, kinds inferred by
  :meth:`Param.generic`); parameters with one value are dropped from the space
  and kept as fixed values (so spec constraints may still name them).
* Known constraints: by default the rule ``recorded`` (a config is feasible iff
  the file holds it, and Kernel Tuner did not reject it as ``InvalidConfig``).
  A spec may add restriction expressions in ``constraints``; with
  ``"recorded_only": false`` those are then the only known constraints.
* Objective: the file's ``time`` (ms), served as latency; the study's value is
  throughput 1/time through :meth:`workload` (one op, one "token" per run).
* Noise, as it was recorded (``"noise": "recorded"``, the default): a config's
  ``times`` are its repeated timings on the GPU, and one measurement of R runs is the
  mean of R draws from them, with replacement (R: ``repeats``, by default as many as
  were recorded, so a measurement is timed as the recording was). Draws are seeded by
  (``seed``, config, draw), so a run repeats exactly and a re-timing (draw > 0) is a
  new measurement. A file whose entries hold no ``times`` serves each config's
  recorded time, noise-free, and :meth:`ReplayBackend.noise_note` says so;
  ``"noise": "none"`` does the same for any file.
* Failures: ``CompilationFailedConfig`` -> ``build``, ``RuntimeFailedConfig`` ->
  ``runtime``, ``InvalidConfig`` -> ``infeasible`` (only reachable when
  ``recorded_only`` is off), a config the file lacks -> ``unsupported``.
* Cost: each measurement reports the recorded compile + verification +
  benchmark time, so time budgets replay as they were spent.

Spec form (a relative ``path`` is resolved against the spec file's folder)::

    "backend": {"name": "replay", "path": "../../shared/spaces/gemm.json.gz",
                "objective": "time", "recorded_only": true, "noise": "recorded",
                "seed": 0, "repeats": null}
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import lru_cache
from pathlib import Path
from typing import Any

import numpy as np

from aoe_optuna.backends.base import BackendBase, Measurement
from aoe_optuna.backends.replay.hub import HubError, is_hub, recorded_space
from aoe_optuna.backends.replay.kt_cache import (
    FAILURE_KINDS,
    CacheFileError,
    RecordedSpace,
    read_cache,
)
from aoe_optuna.space.constraints import Columns
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm, Workload

OPTIONS = ("path", "objective", "recorded_only", "noise", "seed", "repeats")
OBJECTIVES = ("time",)  # milliseconds, lower is better
NOISE = ("recorded", "none")  # draws from each config's recorded repeats, or its mean


def resolve_path(path: str, where: str | None) -> Path:
    """``path`` as given when absolute, else relative to the folder of ``where`` (a spec file).

    Without a spec file (``where`` None or ``"<stored>"``) a relative path is
    taken relative to the current directory. ``benchmark_hub:NAME`` is a recorded
    space of the benchmark_hub repository, downloaded once (:mod:`.hub`).
    """
    if is_hub(path):
        try:
            return recorded_space(path)
        except HubError as exc:
            raise ValueError(f"path: {exc}") from None
    p = Path(path).expanduser()
    if p.is_absolute() or not where or where.startswith("<"):
        return p
    return Path(where).parent / p


@lru_cache(maxsize=8)
def _read(path: str, mtime: float, objective: str) -> RecordedSpace:
    return read_cache(path, objective)


def load_recorded(path: Path, objective: str = "time") -> RecordedSpace:
    """Read (once per process) the cache file at ``path``."""
    if not path.is_file():
        raise ValueError(f"path: expected an existing Kernel Tuner cache file, got '{path}'")
    try:
        return _read(str(path.resolve()), path.stat().st_mtime, objective)
    except CacheFileError as exc:
        raise ValueError(f"path: expected a readable Kernel Tuner cache ({exc})") from None


def _check_options(options: Mapping[str, Any]) -> tuple[str, str, bool]:
    unknown = [k for k in options if k not in OPTIONS]
    if unknown:
        raise ValueError(f"{unknown[0]}: expected one of the options {', '.join(OPTIONS)}, "
                         f"got an unknown option")
    path = options.get("path")
    if not isinstance(path, str) or not path:
        raise ValueError(f"path: expected the path of a Kernel Tuner cache file, got {path!r}")
    objective = options.get("objective", "time")
    if objective not in OBJECTIVES:
        raise ValueError(f"objective: expected one of {list(OBJECTIVES)}, got {objective!r}")
    recorded_only = options.get("recorded_only", True)
    if not isinstance(recorded_only, bool):
        raise ValueError(f"recorded_only: expected true or false, got {recorded_only!r}")
    return path, objective, recorded_only


def _noise_options(options: Mapping[str, Any]) -> tuple[str, int, int | None]:
    noise = options.get("noise", "recorded")
    if noise not in NOISE:
        raise ValueError(f"noise: expected one of {list(NOISE)}, got {noise!r}")
    seed = options.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        raise ValueError(f"seed: expected a non-negative integer, got {seed!r}")
    repeats = options.get("repeats")
    if repeats is not None and (isinstance(repeats, bool) or not isinstance(repeats, int)
                                or not 1 <= repeats <= 100_000):
        raise ValueError(f"repeats: expected runs per measurement from 1 to 100000, or "
                         f"null (as many as recorded), got {repeats!r}")
    return noise, seed, repeats


def recorded_noise(recorded: RecordedSpace, repeats: int | None = None) -> float | None:
    """The median over configs of a measurement's relative standard error (a mean of
    ``repeats`` draws; default as many as recorded); None when nothing is recorded."""
    n = recorded.n_repeats
    has = n >= 2
    if not has.any():
        return None
    rows = recorded.repeats[has]
    rel_sd = np.nanstd(rows, axis=1, ddof=1) / np.nanmean(rows, axis=1)
    r = n[has] if repeats is None else np.full(int(has.sum()), repeats)
    return float(np.median(rel_sd / np.sqrt(r)))


class RecordedRule:
    """Known constraint ``recorded``: the config is one the file holds (and not InvalidConfig).

    Vectorised: each column is mapped to choice indices with a sorted lookup,
    the indices to one mixed-radix id, and the ids are looked up in the sorted
    ids of the recorded configs.
    """

    name = "recorded"

    def __init__(self, params: tuple[Param, ...], rows: np.ndarray, source: str) -> None:
        self.params = params
        self.variables = frozenset(p.name for p in params)
        self.source = source
        self._shape = tuple(len(p.choices) for p in params)
        self._sorted_codes = []
        self._order = []
        for p in params:
            codes = p.codes
            order = np.argsort(codes, kind="stable")
            self._sorted_codes.append(codes[order])
            self._order.append(order)
        self._ids = np.unique(np.ravel_multi_index(tuple(rows.T), self._shape))

    def _indices(self, columns: Columns) -> tuple[np.ndarray, np.ndarray]:
        n = int(np.asarray(columns[self.params[0].name]).shape[0])
        idx = np.zeros((n, len(self.params)), dtype=np.int64)
        known = np.ones(n, dtype=bool)
        for j, p in enumerate(self.params):
            col = np.asarray(columns[p.name])
            codes = self._sorted_codes[j]
            pos = np.clip(np.searchsorted(codes, col), 0, len(codes) - 1)
            known &= codes[pos] == col
            idx[:, j] = self._order[j][pos]
        return idx, known

    def violation(self, columns: Columns) -> np.ndarray:
        idx, known = self._indices(columns)
        ids = np.ravel_multi_index(tuple(idx.T), self._shape)
        pos = np.clip(np.searchsorted(self._ids, ids), 0, max(len(self._ids) - 1, 0))
        hit = known & (self._ids[pos] == ids) if len(self._ids) else np.zeros_like(known)
        return np.where(hit, 0.0, 1.0)

    def describe(self, columns: Columns) -> str:
        values = ", ".join(f"{p.name}={np.asarray(columns[p.name]).ravel()[0]}"
                           for p in self.params)
        return f"recorded: {values} is not a valid config recorded in {self.source}"


def replay_space(recorded: RecordedSpace, recorded_only: bool = True) -> SearchSpace:
    """The SearchSpace of a recorded file: varying params, fixed ones as fixed values."""
    params = tuple(Param.generic(k, recorded.tune_params[k]) for k in recorded.varying)
    rules = []
    if recorded_only:
        rows = []
        pos = [recorded.keys.index(p.name) for p in params]
        for config, failure in zip(recorded.configs, recorded.failures, strict=True):
            if failure == "InvalidConfig":
                continue
            try:
                rows.append([p.choices.index(config[i]) for p, i in zip(params, pos, strict=True)])
            except ValueError:
                raise ValueError(f"path: expected recorded values among tune_params, got "
                                 f"{config} in {recorded.path}") from None
        arr = np.asarray(rows, dtype=np.int64).reshape(-1, len(params))
        rules.append(RecordedRule(params, arr, Path(recorded.path).name))
    return SearchSpace(params, rules, fixed=recorded.fixed)


def replay_workload(recorded: RecordedSpace) -> Workload:
    """One op per step, one "token" per run: tokens/s = 1 / latency, so max tokens/s = min time."""
    name = recorded.kernel_name or "kernel"
    return Workload(
        name=f"replay {name} on {recorded.device_name or 'recorded device'}",
        gemms=(Gemm(1, 1, 1, "fp32", name=name, count=1),),
        tokens_per_step=1,
    )


class ReplayBackend(BackendBase):
    """Measurements looked up in a recorded Kernel Tuner cache (see the module docstring)."""

    name = "replay"
    runs_on_soc = False

    @classmethod
    def timing_noise(cls, options: Mapping[str, Any]) -> float | None:
        """A measurement's relative noise, as the recorded repeats give it (the median
        config's); None without noise (``"none"``, or a file with no repeats): each config
        is answered with its one stored time, and there is nothing to re-time."""
        path, objective, _ = _check_options(options)
        noise, _, repeats = _noise_options(options)
        if noise == "none":
            return None
        return recorded_noise(load_recorded(resolve_path(path, None), objective), repeats)

    def __init__(self, recorded: RecordedSpace, noise: str = "recorded", seed: int = 0,
                 repeats: int | None = None) -> None:
        self.recorded = recorded
        self.noise, self.seed, self.repeats = _noise_options(
            {"noise": noise, "seed": seed, "repeats": repeats})
        self._index = {config: i for i, config in enumerate(recorded.configs)}
        self._scale = 1e-3  # objective "time" is in milliseconds
        self._noisy = noise == "recorded" and bool((recorded.n_repeats > 0).any())

    @classmethod
    def from_options(cls, options: Mapping[str, Any], profile: Any = None,
                     where: str | None = None) -> ReplayBackend:
        path, objective, _ = _check_options(options)
        noise, seed, repeats = _noise_options(options)
        return cls(load_recorded(resolve_path(path, where), objective), noise, seed, repeats)

    @property
    def timing_noise_drawn(self) -> bool:
        """Whether a measurement is drawn from recorded repeats (else the recorded mean)."""
        return self._noisy

    def recorded_latency_s(self, config: Mapping[str, Any]) -> float:
        """The config's recorded mean time in seconds (inf where it failed or is absent):
        the noise-free figure a noisy measurement of it scatters around."""
        rec = self.recorded
        key = tuple(config[k] if k in config else rec.fixed.get(k) for k in rec.keys)
        i = self._index.get(key)
        if i is None or rec.failures[i] is not None:
            return float("inf")
        return float(rec.values[i]) * self._scale

    def with_noise_seed(self, seed: int) -> ReplayBackend:
        """The same recording with its draws seeded by ``seed``."""
        return ReplayBackend(self.recorded, self.noise, seed, self.repeats)

    def noise_note(self) -> str:
        name = Path(self.recorded.path).name
        if self.noise == "none":
            return f"each config's recorded mean time in {name}, noise-free (noise: none)"
        if not self._noisy:
            return (f"{name} records no repeated timings: each config's recorded time, "
                    "noise-free")
        runs = (f"{self.repeats}" if self.repeats is not None
                else "as many as recorded (median "
                f"{int(np.median(self.recorded.n_repeats[self.recorded.n_repeats > 0]))})")
        return (f"each measurement the mean of {runs} draws from the config's recorded "
                f"timings in {name} (seed {self.seed})")

    @classmethod
    def resolve_options(cls, options: Mapping[str, Any], where: str) -> dict[str, Any]:
        """The options with ``path`` made absolute, so a stored spec works from anywhere."""
        path, _, _ = _check_options(options)
        _noise_options(options)
        if is_hub(path):  # the same name finds the same pinned file on any machine
            return dict(options)
        return {**options, "path": str(resolve_path(path, where).resolve())}

    @classmethod
    def search_space(cls, options: Mapping[str, Any], where: str) -> SearchSpace:
        path, objective, recorded_only = _check_options(options)
        return replay_space(load_recorded(resolve_path(path, where), objective), recorded_only)

    @classmethod
    def workload(cls, options: Mapping[str, Any], where: str) -> Workload:
        path, objective, _ = _check_options(options)
        return replay_workload(load_recorded(resolve_path(path, where), objective))

    def measure(self, config: Mapping[str, Any], gemm: Gemm | None = None) -> Measurement:
        return self._measure(config, draw=0)

    def remeasure(self, config: Mapping[str, Any], gemm: Gemm | None, draw: int) -> Measurement:
        """The config timed again: draw ``draw`` of its recorded repeats (the first is 0)."""
        return self._measure(config, draw)

    def _measure(self, config: Mapping[str, Any], draw: int) -> Measurement:
        rec = self.recorded
        try:
            key = tuple(config[k] if k in config else rec.fixed[k] for k in rec.keys)
        except KeyError as exc:
            return Measurement.failure("unsupported", f"config lacks parameter {exc}")
        i = self._index.get(key)
        if i is None:
            return Measurement.failure(
                "unsupported", f"config {key} is not recorded in {Path(rec.path).name}"
            )
        failure = rec.failures[i]
        cost = float(rec.cost_s[i])
        if failure is not None:
            return Measurement.failure(
                FAILURE_KINDS[failure], f"recorded as {failure}", cost_s=cost  # type: ignore[arg-type]
            )
        n = int(rec.n_repeats[i]) if self._noisy else 0
        if n == 0:  # noise-free: the recorded mean
            return Measurement.success(rec.values[i] * self._scale, cost)
        rng = np.random.default_rng([self.seed, i, int(draw)])
        samples = rec.repeats[i, rng.integers(0, n, self.repeats or n)] * self._scale
        return Measurement.success(float(samples.mean()), cost,
                                   samples_s=tuple(float(x) for x in samples))
