"""The spec's backend section made into a Backend, with errors that point at the spec's key."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING, Any

from aoe_optuna.backends.registry import backend_options
from aoe_optuna.spec.format import SpecError

if TYPE_CHECKING:
    from aoe_optuna.backends.base import BackendBase
    from aoe_optuna.spec.loader import StudySpec


def option_error(source: str, options: dict[str, Any], exc: ValueError, what: str) -> SpecError:
    """A backend's ValueError as a SpecError, at ``backend.<option>`` when it names one:
    one the spec sets, or one it leaves at a default the host cannot serve (``compiler:
    expected a C compiler on PATH, ...``: the key to set)."""
    text = " ".join(str(exc).split())
    key, detail = "backend", text
    match = re.match(r"^([A-Za-z_]\w*): (.*)$", text)
    if match and (match.group(1) in options or match.group(2).startswith("expected ")):
        key, detail = f"backend.{match.group(1)}", match.group(2)
    if detail.startswith("expected "):
        expected, _, got = detail.removeprefix("expected ").partition(", got ")
        return SpecError(source, key, expected, got)
    return SpecError(source, key, what, detail)


def make_backend(spec: StudySpec) -> BackendBase:
    """The backend the spec names (its class, found when the spec was read), built from
    its options for the spec's SoC."""
    options = backend_options(spec.backend)
    try:
        return spec.backend_kind.from_options(options, spec.profile)
    except ValueError as exc:
        raise option_error(spec.source, options, exc, "valid backend options") from None
