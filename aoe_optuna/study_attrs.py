"""Where a study keeps its own description, so storage + name is all a worker needs."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import optuna

if TYPE_CHECKING:
    from aoe_optuna.space import SearchSpace
    from aoe_optuna.spec import StudySpec

SPEC_ATTR = "aoe_spec"  # study user attr: StudySpec.canonical() (a JSON-able dict)
SPEC_SOURCE_ATTR = "aoe_spec_source"  # the file the spec came from (informative only)
BASELINE_ATTR = "baseline_tokens_per_s"
ROOFLINE_ATTR = "roofline_tokens_per_s"


def stored_spec(study: optuna.Study) -> StudySpec | None:
    """The spec stored in ``study`` (None for a study not made by aoe-tune)."""
    document: Any = study.user_attrs.get(SPEC_ATTR)
    if document is None:
        return None
    from aoe_optuna.spec import spec_from_dict

    return spec_from_dict(document, source=f"<study {study.study_name}>")


def space_from_study(study: optuna.Study) -> SearchSpace | None:
    """The SearchSpace (with its known constraints) of a study made by aoe-tune."""
    spec = stored_spec(study)
    return None if spec is None else spec.space
