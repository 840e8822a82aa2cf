"""Settings objects of our samplers, from Python or from ``--sampler-kwargs`` JSON.

A sampler takes a few top-level keyword options and groups the rest in frozen
dataclasses (``LearnerSettings``, ``GPUCBSampler``'s ``ModelSettings`` ...). From
the command line a group arrives as a JSON object; :func:`settings_of` turns it
into the dataclass, or fails in one line naming the group, the key and what was
expected (an unknown key is a ``TypeError``, a value of the wrong type a ``ValueError``,
as the options of a sampler's own signature fail).
"""

from __future__ import annotations

import dataclasses
import types
import typing
from collections.abc import Mapping
from typing import Any, TypeVar

from aoe_optuna.samplers.option_types import expected_of

T = TypeVar("T")


def settings_of(cls: type[T], value: T | Mapping[str, Any] | None, where: str) -> T:
    """``value`` as a ``cls``: the defaults for None, a mapping checked key by key.

    ``where`` names the option in messages (``"GPUCBSampler: search"``). A JSON number
    is taken for a float field, a whole number for an int field.
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if not isinstance(value, Mapping):
        raise TypeError(f"{where}: expected {cls.__name__} or a mapping (JSON object) of its "
                        f"fields, got {type(value).__name__}")
    assert dataclasses.is_dataclass(cls)
    fields = {f.name: f for f in dataclasses.fields(cls)}
    unknown = sorted(set(value) - set(fields))
    if unknown:
        raise TypeError(f"{where}: unknown settings {unknown}; expected some of {sorted(fields)}")
    hints = typing.get_type_hints(cls)
    checked = {name: _checked(hints[name], v, f"{where}.{name}") for name, v in value.items()}
    return cls(**checked)


def _checked(annotation: Any, value: Any, where: str) -> Any:
    """``value`` converted to the field's type, or ValueError naming what was expected."""
    kinds = _kinds(annotation)
    for kind in kinds:
        if kind is type(None) and value is None:
            return None
        if kind is bool and isinstance(value, bool):
            return value
        if isinstance(value, bool):
            continue
        if kind is int and (isinstance(value, int) or (isinstance(value, float)
                                                       and value.is_integer())):
            return int(value)
        if kind is float and isinstance(value, int | float):
            return float(value)
        if kind is str and isinstance(value, str):
            return value
        if isinstance(kind, tuple) and value in kind:  # a Literal's choices
            return value
    raise ValueError(f"{where}: expected {expected_of(kinds)}, got {value!r}")


def _kinds(annotation: Any) -> list[Any]:
    """The alternatives of ``X | Y | None`` and ``Literal[...]`` (as a tuple of choices)."""
    origin = typing.get_origin(annotation)
    if origin is typing.Literal:
        return [tuple(typing.get_args(annotation))]
    if origin in (typing.Union, types.UnionType):
        return [k for arg in typing.get_args(annotation) for k in _kinds(arg)]
    return [annotation]
