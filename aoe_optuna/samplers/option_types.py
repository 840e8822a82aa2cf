"""Checking ``--sampler-kwargs`` against a sampler's annotated parameter types.

JSON gives numbers, strings, booleans, lists, objects and null; a sampler that
takes ``n_startup_trials: int`` and is handed ``"x"`` accepts it and fails mid-study
with a traceback. Reading the string annotations (``"int | None"``) is enough for
the option types samplers take; anything the reader does not know (a class, an
alias) is left to the sampler.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any


class OptionTypeError(ValueError):
    """A sampler option whose JSON value cannot be of the annotated type."""


_SCALARS: dict[str, Callable[[Any], bool]] = {
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    "bool": lambda v: isinstance(v, bool),
    "str": lambda v: isinstance(v, str),
    "None": lambda v: v is None,
}
_CONTAINERS: dict[str, Callable[[Any], bool]] = {
    "Sequence": lambda v: isinstance(v, list),
    "list": lambda v: isinstance(v, list),
    "tuple": lambda v: isinstance(v, list),
    "Mapping": lambda v: isinstance(v, dict),
    "dict": lambda v: isinstance(v, dict),
    "Callable": lambda v: False,  # JSON has no functions
}
_SHOWN = {"int": "an integer", "float": "a number", "bool": "true or false",
          "str": "a string", "None": "null", "Sequence": "a list", "list": "a list",
          "tuple": "a list", "Mapping": "an object", "dict": "an object",
          "Callable": "a Python function (not possible from JSON)"}


def check_option_types(target: Callable[..., Any], options: Mapping[str, Any],
                       sampler: str) -> None:
    """Raise :class:`OptionTypeError` for the first option ``target`` cannot take."""
    try:
        params = inspect.signature(target).parameters
    except (TypeError, ValueError):
        return
    for name, value in options.items():
        param = params.get(name)
        if param is None or param.annotation is inspect.Parameter.empty:
            continue
        kinds = _alternatives(param.annotation)
        if kinds is None or any(_accepts(kind, value) for kind in kinds):
            continue
        expected = " or ".join(dict.fromkeys(_SHOWN[k] for k in kinds))
        raise OptionTypeError(f"{sampler}: option {name!r}: expected {expected}, "
                              f"got {_json(value)}")


def expected_of(kinds: list[Any]) -> str:
    """What a value of one of ``kinds`` (types, or tuples of Literal choices) looks like."""
    shown = []
    for kind in kinds:
        if isinstance(kind, tuple):
            shown.append("one of " + ", ".join(repr(c) for c in kind))
        else:
            shown.append(_SHOWN.get("None" if kind is type(None) else kind.__name__,
                                    kind.__name__))
    return " or ".join(dict.fromkeys(shown))


def _alternatives(annotation: Any) -> list[str] | None:
    """The outer names of ``"A | B[...] | None"``; None when any is not one we check."""
    if isinstance(annotation, str):
        text = annotation
    elif isinstance(annotation, type):
        text = annotation.__name__
    else:  # int | None, Sequence[float] written without ``from __future__ import annotations``
        text = str(annotation)
    parts, depth, current = [], 0, ""
    for ch in text:
        depth += ch == "["
        depth -= ch == "]"
        if ch == "|" and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += ch
    parts.append(current)
    names = [p.strip().split("[", 1)[0].rsplit(".", 1)[-1] for p in parts]
    if not all(n in _SCALARS or n in _CONTAINERS for n in names):
        return None
    return names


def _accepts(kind: str, value: Any) -> bool:
    return (_SCALARS.get(kind) or _CONTAINERS[kind])(value)


def _json(value: Any) -> str:
    import json

    text = json.dumps(value)
    return text if len(text) <= 40 else text[:37] + "..."
