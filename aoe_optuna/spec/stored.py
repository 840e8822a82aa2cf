"""Where a study keeps its own description, so storage + name is all a worker needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import optuna

from aoe_optuna.attrs import (  # noqa: F401  (re-exported for the study layer)
    BASELINE_ATTR,
    ROOFLINE_ATTR,
    SAMPLER_ATTR,
    SPEC_ATTR,
    SPEC_SOURCE_ATTR,
)

if TYPE_CHECKING:
    from aoe_optuna.space.search_space import SearchSpace
    from aoe_optuna.spec.loader import StudySpec

def stored_sampler(study: optuna.Study) -> tuple[str, dict[str, Any], int | None] | None:
    """(name, kwargs, seed) of the sampler stored in ``study``; None when none is (or it is
    not one aoe-tune wrote)."""
    value: Any = study.user_attrs.get(SAMPLER_ATTR)
    if not isinstance(value, dict):
        return None
    name, kwargs, seed = value.get("name"), value.get("kwargs", {}), value.get("seed")
    if not isinstance(name, str) or not isinstance(kwargs, dict):
        return None
    if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)):
        return None
    return name, kwargs, seed


def store_sampler(study: optuna.Study, name: str, kwargs: dict[str, Any], seed: int | None) -> None:
    """Remember the sampler this run uses (the next resume without --sampler takes it)."""
    study.set_user_attr(SAMPLER_ATTR, {"name": name, "kwargs": kwargs, "seed": seed})


def stored_spec(study: optuna.Study) -> StudySpec | None:
    """The spec stored in ``study`` (None for a study not made by aoe-tune)."""
    document: Any = study.user_attrs.get(SPEC_ATTR)
    if document is None:
        return None
    from aoe_optuna.spec.loader import spec_from_dict

    return spec_from_dict(document, source=f"<study {study.study_name}>")


def space_from_study(study: optuna.Study) -> SearchSpace | None:
    """The SearchSpace (with its known constraints) of a study made by aoe-tune."""
    spec = stored_spec(study)
    return None if spec is None else spec.space
