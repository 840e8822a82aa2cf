"""Sampler registry: one line adds a sampler to ``aoe-tune --sampler`` and the bench.

Each entry maps a short name to a factory ``(space, seed, **kwargs) -> BaseSampler``.
Our own samplers are named by ``"module:Class"`` and imported only when asked
for, so the CLI starts fast and a broken optional sampler cannot break the rest.
Classes given by path are called as ``Class(space=space, seed=seed, **kwargs)``.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import optuna

from aoe_optuna.samplers.option_types import check_option_types
from aoe_optuna.space.search_space import SearchSpace

if TYPE_CHECKING:
    from aoe_optuna.spec.loader import StudySpec

Factory = Callable[..., optuna.samplers.BaseSampler]
DEFAULT_SAMPLER = "gp-ucb"  # what a new study runs with when none is named


def _random(space: SearchSpace | None, seed: int | None, **kw: Any) -> optuna.samplers.BaseSampler:
    return optuna.samplers.RandomSampler(seed=seed, **kw)


def _tpe(space: SearchSpace | None, seed: int | None, **kw: Any) -> optuna.samplers.BaseSampler:
    return optuna.samplers.TPESampler(seed=seed, **kw)


def _gp(space: SearchSpace | None, seed: int | None, **kw: Any) -> optuna.samplers.BaseSampler:
    return optuna.samplers.GPSampler(seed=seed, **kw)


def _grid(space: SearchSpace | None, seed: int | None, **kw: Any) -> optuna.samplers.BaseSampler:
    if space is None:
        raise ValueError("the grid sampler needs the study's search space")
    grid = {p.name: list(p.choices) for p in space.params}
    return optuna.samplers.GridSampler(grid, seed=seed, **kw)


SAMPLERS: dict[str, Factory | str] = {
    "random": _random,
    "tpe": _tpe,
    "gp": _gp,
    "grid": _grid,
    "gp-ucb": "aoe_optuna.samplers.gp_ucb:GPUCBSampler",
    "reinforce": "aoe_optuna.samplers.reinforce:ReinforceSampler",
}

# The classes the factories above build, whose annotations check ``--sampler-kwargs``.
_FACTORY_CLASSES: dict[str, type[optuna.samplers.BaseSampler]] = {
    "random": optuna.samplers.RandomSampler,
    "tpe": optuna.samplers.TPESampler,
    "gp": optuna.samplers.GPSampler,
    "grid": optuna.samplers.GridSampler,
}

# The samplers that keep the constraint contract; tests/samplers/test_contract.py runs
# its checks on each of them, so a sampler named here gets them without a test of its own.
# The contract, given the study's SearchSpace: every proposal is a feasible config of it;
# none is a config another trial of the study measured, failed on or holds (a RUNNING
# trial's params or claim, see ``claims``); a fresh sampler with the same seed on the
# same storage proposes what the first would have (so a resumed study is the straight
# run, trial for trial); and workers sharing one study never measure a config twice.
CONSTRAINT_AWARE: frozenset[str] = frozenset({"gp-ucb", "reinforce"})

# Names our classes take in ``aoe-optuna ask --sampler <Name>``.
OPTUNA_CLI_NAMES: dict[str, str] = {
    "GPUCBSampler": "gp-ucb",
    "ReinforceSampler": "reinforce",
}


class UnknownSamplerError(ValueError):
    """A sampler name that is not registered (or whose module is missing)."""


def sampler_names() -> list[str]:
    return list(SAMPLERS)


def constraint_aware_names() -> list[str]:
    """The registered samplers that keep the constraint contract, in registry order."""
    return [name for name in SAMPLERS if name in CONSTRAINT_AWARE]


def sampler_class(name: str) -> type[optuna.samplers.BaseSampler]:
    """The class behind a path-registered sampler (for the Optuna CLI bridge)."""
    entry = SAMPLERS.get(name)
    if not isinstance(entry, str):
        raise UnknownSamplerError(f"{name!r} is not a class-registered sampler")
    module_name, _, cls_name = entry.partition(":")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        raise UnknownSamplerError(f"sampler {name!r} is not available ({exc})") from None
    return getattr(module, cls_name)


def takes_prior(name: str) -> bool:
    """Whether the registered sampler ``name`` takes a ``prior`` (GPUCBSampler does)."""
    import inspect

    if not isinstance(SAMPLERS.get(name), str):
        return False
    try:
        return "prior" in inspect.signature(sampler_class(name).__init__).parameters
    except UnknownSamplerError:
        return False


def make_sampler(
    name: str, *, space: SearchSpace | None = None, seed: int | None = None,
    spec: StudySpec | None = None, **kwargs: Any
) -> optuna.samplers.BaseSampler:
    """Build sampler ``name``; kwargs are passed through (``--sampler-kwargs``).

    ``spec``: the study's spec. Our samplers are then built by their ``from_spec``, on its
    space with its workload and SoC (their models' inputs); the others get its space.
    """
    if spec is not None:
        space = spec.space
    entry = SAMPLERS.get(name)
    if entry is None:
        raise UnknownSamplerError(
            f"unknown sampler {name!r}: expected one of {', '.join(SAMPLERS)}"
        )
    target = sampler_class(name) if isinstance(entry, str) else _FACTORY_CLASSES.get(name)
    if target is not None:
        check_option_types(target.__init__, kwargs, name)
    if isinstance(entry, str):
        cls: Any = sampler_class(name)
        if spec is not None and hasattr(cls, "from_spec"):
            return cls.from_spec(spec, seed=seed, **kwargs)
        return cls(space=space, seed=seed, **kwargs)
    return entry(space, seed, **kwargs)
