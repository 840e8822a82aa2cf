"""Reading a study spec file, and the one error type every bad spec raises.

The file is JSON with ``//`` comments (AOE's config format; parsed by the
``json5`` package, so trailing commas and comments are fine) or TOML. Values
are then read through :class:`Section`, which checks types and ranges and, on
failure, raises one :class:`SpecError` line that names the file, the dotted key
and what was expected.
"""

from __future__ import annotations

import difflib
import math
import tomllib
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import json5

JSON_SUFFIXES = (".json", ".json5", ".jsonc")
TOML_SUFFIXES = (".toml",)
MAX_SPEC_BYTES = 1 << 20  # a study spec is a page of text, not a data file
# The shipped specs nest 3 levels deep (an inline SoC profile adds 2); far deeper is a
# generated or hostile file, and everything that walks a spec (checks, copies, JSON) recurses.
MAX_SPEC_DEPTH = 32


class SpecError(ValueError):
    """A spec that cannot be accepted.

    ``str(e)`` is one line: ``<file>: key '<dotted.key>': expected <what>, got <what>``.
    """

    def __init__(self, source: str, key: str | None, expected: str, got: str = "") -> None:
        self.source = source
        self.key = key
        self.expected = expected
        self.got = got
        where = f"key '{key}'" if key else "document"
        text = f"{source}: {where}: expected {expected}" + (f", got {got}" if got else "")
        super().__init__(" ".join(text.split()))


def describe(value: Any, limit: int = 60) -> str:
    """A short, one-line rendering of a user value for error messages."""
    if isinstance(value, Mapping):
        text = "an object {" + ", ".join(map(str, value)) + "}"
    elif isinstance(value, list):
        text = f"a list {value!r}"
    else:
        text = repr(value)
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def nearest(word: str, options: Iterable[str]) -> str:
    """' (did you mean 'x'?)' when a close spelling exists, else ''."""
    close = difflib.get_close_matches(word, list(options), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def read_document(path: str | Path) -> dict[str, Any]:
    """Parse a spec file by its suffix: JSON/JSON5 (comments allowed) or TOML."""
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise SpecError(source, None, "an existing study spec file", "no such file")
    raw = path.read_bytes()
    if len(raw) > MAX_SPEC_BYTES:
        raise SpecError(source, None, f"a spec under {MAX_SPEC_BYTES} bytes", f"{len(raw)} bytes")
    try:
        # a byte-order mark (Windows editors write one) is no part of either format's
        # text; TOML's parser refused it, json5 skipped it, workload CSV/JSON skip it too
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SpecError(source, None, "UTF-8 text", f"a byte that is not ({exc.reason})") from None
    suffix = path.suffix.lower()
    if suffix in TOML_SUFFIXES:
        return parse_toml(text, source)
    if suffix in JSON_SUFFIXES:
        return parse_json(text, source)
    raise SpecError(
        source, None, f"a file ending in one of {', '.join(JSON_SUFFIXES + TOML_SUFFIXES)}",
        repr(path.suffix or "no suffix"),
    )


def parse_json(text: str, source: str) -> dict[str, Any]:
    """JSON with comments and trailing commas; duplicate keys are an error."""
    try:
        data = json5.loads(text, allow_duplicate_keys=False)
    except ValueError as exc:
        raise SpecError(
            source, None, "valid JSON (// comments allowed)", _json5_where(exc)
        ) from None
    except RecursionError:
        raise SpecError(source, None, "valid JSON", "objects nested too deeply") from None
    if not isinstance(data, dict):
        raise SpecError(source, None, "a JSON object at the top level", describe(data))
    return data


def parse_toml(text: str, source: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(source, None, "valid TOML", str(exc)) from None
    except RecursionError:
        raise SpecError(source, None, "valid TOML", "tables or arrays nested too deeply") from None


def check_plain(document: Any, source: str) -> None:
    """Refuse a spec document nested deeper than :data:`MAX_SPEC_DEPTH` or holding a NaN
    or an infinity anywhere (JSON5 and TOML both spell them): no value of a spec may be
    one, and a NaN passes every range check (``nan < 0`` and ``nan > 1`` are both false).
    Iterative, so the check itself cannot overflow the stack."""
    stack: list[tuple[Any, str, int]] = [(document, "", 0)]
    while stack:
        value, key, depth = stack.pop()
        if isinstance(value, float) and not math.isfinite(value):
            raise SpecError(source, _short(key) or None, "a finite number", repr(value))
        if isinstance(value, Mapping):
            items = [(f"{key}.{k}" if key else str(k), v) for k, v in value.items()]
        elif isinstance(value, list):
            items = [(f"{key}[{i}]", v) for i, v in enumerate(value)]
        else:
            continue
        if depth == MAX_SPEC_DEPTH:
            raise SpecError(source, _short(key), f"at most {MAX_SPEC_DEPTH} levels of nested "
                            "objects and arrays", "deeper nesting")
        stack.extend((v, k, depth + 1) for k, v in reversed(items))


def _short(key: str, limit: int = 120) -> str:
    """A dotted key short enough for one line: its head and its tail."""
    return key if len(key) <= limit else f"{key[:limit // 2 - 3]}...{key[-limit // 2:]}"


def _json5_where(exc: ValueError) -> str:
    """json5 says '<string>:3 Unexpected ...'; turn that into 'line 3: Unexpected ...'."""
    msg = str(exc)
    head, sep, rest = msg.partition(" ")
    if head.startswith("<string>:") and sep:
        return f"line {head.split(':', 1)[1]}: {rest}"
    return msg


class Section:
    """A mapping of the spec plus its dotted key, with typed getters that raise SpecError."""

    def __init__(self, source: str, key: str, data: Any, what: str = "an object") -> None:
        if not isinstance(data, Mapping):
            raise SpecError(source, key or None, what, describe(data))
        self.source = source
        self.key = key
        self.data: Mapping[str, Any] = data

    def path(self, name: str) -> str:
        return f"{self.key}.{name}" if self.key else name

    def error(self, name: str | None, expected: str, got: Any = None, raw: str = "") -> SpecError:
        key = self.path(name) if name is not None else (self.key or None)
        return SpecError(self.source, key, expected, raw or ("" if got is None else describe(got)))

    def check_keys(self, allowed: Iterable[str]) -> None:
        allowed = list(allowed)
        for name in self.data:
            if not isinstance(name, str) or name not in allowed:
                raise self.error(
                    str(name), f"one of the keys {', '.join(allowed)}",
                    raw=f"an unknown key{nearest(str(name), allowed)}",
                )

    def has(self, name: str) -> bool:
        return name in self.data and self.data[name] is not None

    def section(self, name: str) -> Section:
        return Section(self.source, self.path(name), self.data.get(name, {}), "an object")

    def string(self, name: str, default: str | None = None,
               choices: Iterable[str] | None = None) -> str:
        value = self.data.get(name, default)
        if value is None:
            raise self.error(name, "a string", raw="nothing")
        options = list(choices) if choices is not None else None
        if not isinstance(value, str) or not value.strip():
            expected = f"one of {options}" if options else "a non-empty string"
            raise self.error(name, expected, value)
        if options is not None and value not in options:
            raise self.error(
                name, f"one of {options}", raw=f"{value!r}{nearest(value, options)}"
            )
        return value

    def integer(self, name: str, default: int, low: int, high: int) -> int:
        value = self.data.get(name, default)
        ok = isinstance(value, int) and not isinstance(value, bool)
        if isinstance(value, float) and value.is_integer():
            value, ok = int(value), True
        if not ok or not low <= value <= high:
            raise self.error(name, f"an integer from {low} to {high:,}", value)
        return int(value)

    def number(self, name: str, default: float | None, low: float = 0.0,
               high: float = math.inf, low_open: bool = False) -> float | None:
        """A finite number in [low, high] (or (low, high] with ``low_open``); None if absent."""
        value = self.data.get(name, default)
        if value is None:
            return None
        bound = f"{'above' if low_open else 'at least'} {low:g}"
        if high != math.inf:
            bound += f" and at most {high:g}"
        expected = f"a finite number {bound}"
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(name, expected, value)
        if not math.isfinite(value) or value < low or (low_open and value == low) or value > high:
            raise self.error(name, expected, value)
        return float(value)
