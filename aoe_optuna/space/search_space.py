"""SearchSpace: the one source of truth for what a config is and which are legal.

The same object gives Optuna its distributions, gives our samplers the
feasible candidate set (enumerated with numpy, never a Python loop per
config), and gives the objective its constraint checks.

Feasibility only depends on the *core* parameters, those some rule reads.
The rest (compile options that no rule names) are *free*: every combination of
them is feasible. The feasible set is therefore ``feasible core x free
product``, which is how the 11.8M-point study is counted, sampled and
enumerated exactly without holding it in memory.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import cached_property
from typing import Any

import numpy as np
import optuna.distributions as od

from aoe_optuna.space.constraints import Rule
from aoe_optuna.space.params import KNOWN_PARAMS, Param, ParamError, default_config, to_code

# Past this many core configs the feasible core is not materialised; counting
# and enumeration then go chunk by chunk, sampling by rejection.
MATERIALISE_LIMIT = 8_000_000
CHUNK = 1_000_000


class SearchSpace:
    """Parameters (ordered), constraint rules, and values for untuned tunables."""

    def __init__(
        self,
        params: Sequence[Param],
        rules: Sequence[Rule] = (),
        fixed: Mapping[str, Any] | None = None,
    ) -> None:
        if not params:
            raise ParamError("a search space needs at least one parameter")
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise ParamError(f"duplicate parameter names in {names}")
        for p in params:
            if not p.choices:
                raise ParamError(f"{p.name}: empty choice list")
            if len(set(p.choices)) != len(p.choices):
                raise ParamError(f"{p.name}: duplicate choices in {list(p.choices)}")
        self.params: tuple[Param, ...] = tuple(params)
        self.names: tuple[str, ...] = tuple(names)
        self.rules: tuple[Rule, ...] = tuple(rules)
        known_defaults = {k: v for k, v in default_config().items() if k not in names}
        base = known_defaults if all(n in KNOWN_PARAMS for n in names) else {}
        self.fixed: dict[str, Any] = {**base, **dict(fixed or {})}
        self._fixed_codes = {
            k: to_code(k, v) if k in KNOWN_PARAMS else v for k, v in self.fixed.items()
        }
        self._codes = [p.codes for p in self.params]
        read = set().union(*(r.variables for r in self.rules)) if self.rules else set()
        missing = read - set(names) - set(self.fixed)
        if missing:
            raise ParamError(f"rules read unknown variables {sorted(missing)}")
        self.core: tuple[int, ...] = tuple(i for i, n in enumerate(names) if n in read)
        self.free: tuple[int, ...] = tuple(i for i, n in enumerate(names) if n not in read)

    # ----------------------------------------------------------------- sizes
    @property
    def shape(self) -> tuple[int, ...]:
        return tuple(len(p.choices) for p in self.params)

    @property
    def size(self) -> int:
        """Points in the cartesian product (feasible or not)."""
        return int(np.prod([len(p.choices) for p in self.params], dtype=object))

    @property
    def core_size(self) -> int:
        return int(np.prod([self.shape[i] for i in self.core], dtype=object))

    @property
    def free_size(self) -> int:
        return int(np.prod([self.shape[i] for i in self.free], dtype=object))

    @cached_property
    def n_feasible_core(self) -> int:
        if self.materialised:
            return int(self.feasible_core.shape[0])
        return sum(int(self._core_ok(chunk).sum()) for chunk in self._core_chunks())

    @property
    def n_feasible(self) -> int:
        """Feasible points in the whole space (exact)."""
        return self.n_feasible_core * self.free_size

    @property
    def materialised(self) -> bool:
        return self.core_size <= MATERIALISE_LIMIT

    # ------------------------------------------------------------ conversions
    def distributions(self) -> dict[str, od.BaseDistribution]:
        """Optuna distributions: an int range where the choices are one, else categorical."""
        out: dict[str, od.BaseDistribution] = {}
        for p in self.params:
            vals = p.choices
            if p.kind == "int" and len(vals) > 2 and _is_arithmetic(vals):
                out[p.name] = od.IntDistribution(min(vals), max(vals), step=vals[1] - vals[0])
            else:
                out[p.name] = od.CategoricalDistribution(list(vals))
        return out

    def columns(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Numeric columns for index rows ``idx`` (n, d), with fixed values broadcast."""
        idx = np.atleast_2d(idx)
        n = idx.shape[0]
        cols: dict[str, np.ndarray] = {
            k: np.full(n, v) for k, v in self._fixed_codes.items()
        }
        for j, name in enumerate(self.names):
            cols[name] = self._codes[j][idx[:, j]]
        return cols

    def config(self, row: np.ndarray | Sequence[int]) -> dict[str, Any]:
        """The config of one index row (tuned params only, in space order)."""
        return {p.name: p.choices[int(i)] for p, i in zip(self.params, row, strict=True)}

    def full_config(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """A config with the fixed values of untuned tunables added."""
        return {**self.fixed, **dict(config)}

    def configs(self, idx: np.ndarray) -> list[dict[str, Any]]:
        return [self.config(r) for r in np.atleast_2d(idx)]

    def index(self, config: Mapping[str, Any]) -> np.ndarray:
        """Index row of a config; every tuned parameter must be present and valid."""
        missing = [n for n in self.names if n not in config]
        if missing:
            raise ParamError(f"config lacks parameters {missing}")
        return np.array([p.index(config[p.name]) for p in self.params], dtype=np.int64)

    def flat_id(self, idx: np.ndarray) -> np.ndarray:
        """A unique int64 per config (mixed radix), for duplicate checks."""
        idx = np.atleast_2d(idx).astype(np.int64)
        return np.ravel_multi_index(tuple(idx.T), self.shape) if self.size < 2**62 else (
            _fallback_ids(idx, self.shape)
        )

    def from_flat_id(self, ids: np.ndarray) -> np.ndarray:
        return np.stack(np.unravel_index(np.asarray(ids, dtype=np.int64), self.shape), axis=1)

    # ------------------------------------------------------------ feasibility
    def violations(self, idx: np.ndarray) -> dict[str, np.ndarray]:
        """Per rule, per config: <= 0 where the rule holds."""
        cols = self.columns(idx)
        return {r.name: np.asarray(r.violation(cols), dtype=float) for r in self.rules}

    def is_feasible(self, idx: np.ndarray) -> np.ndarray:
        cols = self.columns(idx)
        ok = np.ones(cols[self.names[0]].shape[0], dtype=bool)
        for r in self.rules:
            ok &= np.asarray(r.violation(cols)) <= 0
        return ok

    def explain(self, config: Mapping[str, Any]) -> list[str]:
        """One message per rule ``config`` breaks ("L0A: needs 128 KiB, has 64 KiB")."""
        cols = self.columns(self.index(config)[None, :])
        return [r.describe(cols) for r in self.rules if np.asarray(r.violation(cols))[0] > 0]

    @cached_property
    def feasible_core(self) -> np.ndarray:
        """Index rows (over the core params, in core order) of every feasible core config."""
        if not self.materialised:
            raise MemoryError(
                f"core of {self.core_size:,} configs is past the materialise limit"
            )
        chunks = [c[self._core_ok(c)] for c in self._core_chunks()]
        return np.concatenate(chunks).astype(np.int16) if chunks else np.zeros(
            (0, len(self.core)), dtype=np.int16
        )

    def _core_chunks(self, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        core_shape = tuple(self.shape[i] for i in self.core)
        total = self.core_size
        for start in range(0, total, chunk):
            flat = np.arange(start, min(start + chunk, total), dtype=np.int64)
            if core_shape:
                yield np.stack(np.unravel_index(flat, core_shape), axis=1)
            else:
                yield np.zeros((flat.shape[0], 0), dtype=np.int64)

    def _core_ok(self, core_idx: np.ndarray) -> np.ndarray:
        full = np.zeros((core_idx.shape[0], len(self.names)), dtype=np.int64)
        full[:, list(self.core)] = core_idx
        return self.is_feasible(full)

    def _expand(self, core_idx: np.ndarray, free_idx: np.ndarray) -> np.ndarray:
        full = np.zeros((core_idx.shape[0], len(self.names)), dtype=np.int64)
        full[:, list(self.core)] = core_idx
        full[:, list(self.free)] = free_idx
        return full

    def iter_feasible(self, chunk: int = CHUNK) -> Iterator[np.ndarray]:
        """Every feasible config as index rows, in chunks of about ``chunk`` rows."""
        free_shape = tuple(self.shape[i] for i in self.free)
        nfree = self.free_size
        core_iter: Iterator[np.ndarray]
        if self.materialised:
            fc = self.feasible_core.astype(np.int64)
            cores_per = max(1, chunk // max(nfree, 1))
            core_iter = (fc[i : i + cores_per] for i in range(0, fc.shape[0], cores_per))
        else:
            core_iter = (c[self._core_ok(c)] for c in self._core_chunks())
        free_all = (
            np.stack(np.unravel_index(np.arange(nfree), free_shape), axis=1)
            if free_shape else np.zeros((1, 0), dtype=np.int64)
        )
        for core in core_iter:
            if core.shape[0] == 0:
                continue
            per = max(1, chunk // max(core.shape[0], 1))
            for f in range(0, free_all.shape[0], per):
                fr = free_all[f : f + per]
                c_rep = np.repeat(core, fr.shape[0], axis=0)
                f_rep = np.tile(fr, (core.shape[0], 1))
                yield self._expand(c_rep, f_rep)

    def all_feasible(self) -> np.ndarray:
        """Every feasible config as index rows (only for spaces that fit in memory)."""
        if self.n_feasible > 4 * CHUNK * 8:
            raise MemoryError(f"{self.n_feasible:,} feasible configs: iterate with iter_feasible")
        parts = list(self.iter_feasible())
        return np.concatenate(parts) if parts else np.zeros((0, len(self.names)), np.int64)

    def sample_feasible(
        self, n: int, rng: np.random.Generator, exclude: set[int] | None = None
    ) -> np.ndarray:
        """``n`` feasible configs, uniform over the feasible set, distinct, none in ``exclude``.

        Returns fewer rows only when fewer such configs exist.
        """
        exclude = exclude or set()
        out: list[np.ndarray] = []
        seen: set[int] = set(exclude)
        attempts = 0
        while len(out) < n and attempts < 50:
            attempts += 1
            want = max(2 * (n - len(out)), 16)
            cand = self._draw_feasible(want, rng)
            for row, fid in zip(cand, self.flat_id(cand), strict=True):
                if int(fid) not in seen:
                    seen.add(int(fid))
                    out.append(row)
                    if len(out) == n:
                        break
        if len(out) < n and self.n_feasible <= 4 * CHUNK:
            rest = [r for r in self.all_feasible() if int(self.flat_id(r)[0]) not in seen]
            rng.shuffle(rest)
            out.extend(rest[: n - len(out)])
        return np.array(out, dtype=np.int64).reshape(-1, len(self.names))

    def _draw_feasible(self, n: int, rng: np.random.Generator) -> np.ndarray:
        free = np.stack(
            [rng.integers(0, self.shape[i], n) for i in self.free], axis=1
        ) if self.free else np.zeros((n, 0), dtype=np.int64)
        if self.materialised:
            if self.feasible_core.shape[0] == 0:
                return np.zeros((0, len(self.names)), dtype=np.int64)
            core = self.feasible_core[rng.integers(0, self.feasible_core.shape[0], n)]
            return self._expand(core.astype(np.int64), free)
        rows: list[np.ndarray] = []
        got = 0
        for _ in range(200):
            cand = np.stack([rng.integers(0, self.shape[i], 4 * n) for i in self.core], axis=1)
            cand = cand[self._core_ok(cand)]
            rows.append(cand)
            got += cand.shape[0]
            if got >= n:
                break
        core = np.concatenate(rows)[:n]
        return self._expand(core, free[: core.shape[0]])

    def feasible_choices(self, partial: Mapping[str, int], name: str) -> np.ndarray:
        """Mask over ``name``'s choices: which keep the partial assignment completable.

        ``partial`` maps already-chosen parameter names to choice indices. A
        choice is allowed when some feasible config agrees with ``partial`` and
        takes that choice (exact on materialised cores; on larger ones, by a
        sample of feasible configs, never allowing a known-infeasible choice).
        """
        j = self.names.index(name)
        n_choices = self.shape[j]
        if j in self.free:
            return np.ones(n_choices, dtype=bool)
        core_pos = {self.names[i]: k for k, i in enumerate(self.core)}
        if self.materialised:
            rows = self.feasible_core
            sel = np.ones(rows.shape[0], dtype=bool)
            for pname, choice in partial.items():
                if pname in core_pos:
                    sel &= rows[:, core_pos[pname]] == choice
            mask = np.zeros(n_choices, dtype=bool)
            mask[np.unique(rows[sel, core_pos[name]])] = True
            return mask
        rng = np.random.default_rng(0)
        mask = np.zeros(n_choices, dtype=bool)
        for c in range(n_choices):
            trial = {**partial, name: c}
            cand = np.stack([rng.integers(0, self.shape[i], 4096) for i in self.core], axis=1)
            for pname, choice in trial.items():
                if pname in core_pos:
                    cand[:, core_pos[pname]] = choice
            mask[c] = bool(self._core_ok(cand).any())
        return mask

    def nearest_feasible(self, config: Mapping[str, Any]) -> dict[str, Any]:
        """The feasible config closest to ``config`` in the encoded space."""
        row = self.index(config)
        if self.is_feasible(row[None, :])[0]:
            return self.config(row)
        if not self.materialised:
            cand = self.sample_feasible(20_000, np.random.default_rng(0))
        else:
            cand = self._expand(
                self.feasible_core.astype(np.int64),
                np.repeat(row[list(self.free)][None, :], self.feasible_core.shape[0], axis=0),
            )
        if cand.shape[0] == 0:
            raise ValueError("the space has no feasible config")
        dist = ((self.encode(cand) - self.encode(row[None, :])) ** 2).sum(axis=1)
        return self.config(cand[int(np.argmin(dist))])

    # ------------------------------------------------------------- encoding
    @cached_property
    def _encoders(self) -> list[np.ndarray]:
        """Per parameter, the encoded vector of each choice (rows = choices)."""
        enc = []
        for p in self.params:
            k = len(p.choices)
            if p.kind == "categorical":
                enc.append(np.eye(k))
                continue
            if p.kind in ("int", "real"):
                vals = np.asarray(p.choices, dtype=float)
                x = np.log2(vals) if p.is_log_scaled else vals
            else:
                x = np.arange(k, dtype=float)
            span = x.max() - x.min()
            enc.append(((x - x.min()) / span if span > 0 else np.zeros(k))[:, None])
        return enc

    @property
    def encoded_dim(self) -> int:
        return sum(e.shape[1] for e in self._encoders)

    @property
    def categorical_dims(self) -> list[int]:
        """Columns of the encoding that are one-hot category indicators."""
        dims: list[int] = []
        pos = 0
        for p, e in zip(self.params, self._encoders, strict=True):
            if p.kind == "categorical":
                dims.extend(range(pos, pos + e.shape[1]))
            pos += e.shape[1]
        return dims

    def encode(self, idx: np.ndarray) -> np.ndarray:
        """Index rows -> floats in [0, 1]: log2 for sizes, scaled ranks, one-hot categories."""
        idx = np.atleast_2d(idx)
        return np.concatenate([e[idx[:, j]] for j, e in enumerate(self._encoders)], axis=1)

    def decode(self, x: np.ndarray) -> np.ndarray:
        """Encoded rows -> the nearest index rows (per parameter)."""
        x = np.atleast_2d(x)
        out = np.zeros((x.shape[0], len(self.params)), dtype=np.int64)
        pos = 0
        for j, e in enumerate(self._encoders):
            w = e.shape[1]
            part = x[:, pos : pos + w]
            out[:, j] = np.argmin(((part[:, None, :] - e[None, :, :]) ** 2).sum(-1), axis=1)
            pos += w
        return out


def _is_arithmetic(vals: Sequence[int]) -> bool:
    diffs = np.diff(np.asarray(vals))
    return bool(diffs.size and (diffs == diffs[0]).all() and diffs[0] > 0)


def _fallback_ids(idx: np.ndarray, shape: tuple[int, ...]) -> np.ndarray:
    ids = np.zeros(idx.shape[0], dtype=object)
    for j, k in enumerate(shape):
        ids = ids * k + idx[:, j]
    return ids

