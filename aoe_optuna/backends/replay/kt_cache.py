"""Reader for Kernel Tuner cache files: recorded tuning spaces to replay offline.

A cache file (format: ../shared/spaces/README.md) holds a header
(``tune_params_keys``, ``tune_params``, ``objective``) and ``cache``, one entry
per measured configuration. Kernel Tuner writes it line by line while tuning,
so a file from an interrupted run lacks its closing braces: the reader then
parses the header and the entries one line at a time and keeps every complete
entry. Gzip is detected by its magic bytes, not the file name.

Failed configurations store a string instead of a number in the objective
field; :data:`FAILURE_KINDS` maps them onto our failure kinds.
"""

from __future__ import annotations

import gzip
import json
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

# Kernel Tuner's failure strings -> our FailureKind. InvalidConfig is what Kernel
# Tuner records when it rejects a config before compiling it (a restriction or a
# launch limit such as too many threads per block): a known constraint, hence
# "infeasible". The replay space leaves such keys out of its feasible set.
# ErrorConfig, the base of Kernel Tuner's failure classes, is what some of its
# versions record for a failure of no finer kind: a failed run of the config.
FAILURE_KINDS: dict[str, str] = {
    "InvalidConfig": "infeasible",
    "CompilationFailedConfig": "build",
    "RuntimeFailedConfig": "runtime",
    "ErrorConfig": "runtime",
}

# Entry fields that make up what one measurement cost (milliseconds).
COST_FIELDS = ("compile_time", "verification_time", "benchmark_time")

_CACHE_OPENER = '"cache": {'


class CacheFileError(ValueError):
    """A cache file that cannot be read; the message names the file and what was expected."""


@dataclass(frozen=True)
class RecordedSpace:
    """The contents of one cache file, as arrays (one row per recorded entry).

    ``values[i]`` is the objective (e.g. time in ms) of entry ``i``, NaN when it
    failed; ``failures[i]`` the failure string or ``None``; ``cost_s[i]`` the
    recorded compile + verification + benchmark time in seconds; ``repeats[i]`` the
    entry's repeated timings (its ``times``, the objective's unit), NaN-padded to the
    longest, and ``n_repeats[i]`` how many it holds (0: none recorded).
    """

    path: str
    device_name: str
    kernel_name: str
    objective: str
    keys: tuple[str, ...]  # tune_params_keys, in key order
    tune_params: dict[str, tuple[Any, ...]]
    configs: tuple[tuple[Any, ...], ...]  # values in ``keys`` order
    values: np.ndarray
    failures: tuple[str | None, ...]
    cost_s: np.ndarray
    truncated: bool
    repeats: np.ndarray = field(default_factory=lambda: np.zeros((0, 0)))
    n_repeats: np.ndarray = field(default_factory=lambda: np.zeros(0, dtype=np.int64))

    @property
    def varying(self) -> tuple[str, ...]:
        """Parameters with more than one value (the ones a sampler tunes)."""
        return tuple(k for k in self.keys if len(self.tune_params[k]) > 1)

    @property
    def fixed(self) -> dict[str, Any]:
        return {k: self.tune_params[k][0] for k in self.keys if len(self.tune_params[k]) == 1}

    def __len__(self) -> int:
        return len(self.configs)


def read_cache(path: str | Path, objective: str | None = None) -> RecordedSpace:
    """Read a Kernel Tuner cache file (plain or gzip; a truncated end is tolerated).

    ``objective`` overrides the file's own (``time`` when the file names none).
    """
    path = Path(path)
    source = str(path)
    if not path.is_file():
        raise CacheFileError(f"{source}: expected an existing Kernel Tuner cache file")
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError):
            raw = _decompress_partial(raw)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CacheFileError(f"{source}: expected UTF-8 JSON text ({exc.reason})") from None
    truncated = False
    try:
        doc = json.loads(text)
    except json.JSONDecodeError:
        doc = _parse_truncated(text, source)
        truncated = True
    if not isinstance(doc, dict):
        raise CacheFileError(f"{source}: expected a JSON object at the top level")
    return _to_space(doc, source, objective, truncated)


def _decompress_partial(raw: bytes) -> bytes:
    """Whatever a cut-off gzip stream yields before it ends."""
    d = gzip.zlib.decompressobj(16 + gzip.zlib.MAX_WBITS)  # type: ignore[attr-defined]
    return d.decompress(raw)


def _parse_truncated(text: str, source: str) -> dict[str, Any]:
    """Header + every complete ``"key": {...}`` line of the cache section."""
    at = text.find(_CACHE_OPENER)
    if at < 0:
        raise CacheFileError(f"{source}: expected JSON with a 'cache' section (file is cut short)")
    try:
        header = json.loads(text[:at] + '"cache": {}}')
    except json.JSONDecodeError as exc:
        raise CacheFileError(f"{source}: expected a JSON header before 'cache' ({exc})") from None
    entries: dict[str, Any] = {}
    for line in text[at + len(_CACHE_OPENER):].splitlines():
        line = line.strip().rstrip(",")
        if not line:
            continue
        if line.startswith("}"):
            break
        try:
            entries.update(json.loads("{" + line + "}"))
        except json.JSONDecodeError:
            break  # the cut-off last line
    header["cache"] = entries
    return header


def _to_space(doc: dict[str, Any], source: str, objective: str | None,
              truncated: bool) -> RecordedSpace:
    for key in ("tune_params_keys", "tune_params", "cache"):
        if key not in doc:
            raise CacheFileError(f"{source}: key '{key}': expected it in a Kernel Tuner cache")
    keys = doc["tune_params_keys"]
    params = doc["tune_params"]
    if not isinstance(keys, list) or not all(isinstance(k, str) for k in keys):
        raise CacheFileError(f"{source}: key 'tune_params_keys': expected a list of names")
    if not isinstance(params, dict) or set(params) != set(keys):
        raise CacheFileError(
            f"{source}: key 'tune_params': expected a list of values for each of {keys}"
        )
    obj = objective or doc.get("objective") or "time"
    configs: list[tuple[Any, ...]] = []
    values: list[float] = []
    failures: list[str | None] = []
    costs: list[float] = []
    times: list[list[float]] = []
    for name, entry in doc["cache"].items():
        if not isinstance(entry, dict) or obj not in entry:
            raise CacheFileError(
                f"{source}: key 'cache.{name}': expected an object with '{obj}'"
            )
        missing = [k for k in keys if k not in entry]
        if missing:
            raise CacheFileError(f"{source}: key 'cache.{name}': lacks parameters {missing}")
        configs.append(tuple(entry[k] for k in keys))
        value = entry[obj]
        if isinstance(value, str):
            if value not in FAILURE_KINDS:
                raise CacheFileError(
                    f"{source}: key 'cache.{name}.{obj}': expected a number or one of "
                    f"{list(FAILURE_KINDS)}, got {value!r}"
                )
            failures.append(value)
            values.append(math.nan)
        else:
            failures.append(None)
            values.append(float(value))
        costs.append(sum(float(entry.get(f) or 0.0) for f in COST_FIELDS) / 1000.0)
        times.append(_repeats(entry, failures[-1] is None) if obj == "time" else [])
    width = max((len(t) for t in times), default=0)
    repeats = np.full((len(times), width), np.nan)
    for i, t in enumerate(times):
        repeats[i, :len(t)] = t
    return RecordedSpace(
        path=source,
        device_name=str(doc.get("device_name", "")),
        kernel_name=str(doc.get("kernel_name", "")),
        objective=obj,
        keys=tuple(keys),
        tune_params={k: tuple(params[k]) for k in keys},
        configs=tuple(configs),
        values=np.asarray(values, dtype=float),
        failures=tuple(failures),
        cost_s=np.asarray(costs, dtype=float),
        truncated=truncated,
        repeats=repeats,
        n_repeats=np.asarray([len(t) for t in times], dtype=np.int64),
    )


def _repeats(entry: dict[str, Any], ok: bool) -> list[float]:
    """The entry's repeated timings (``times``) when it holds a usable list of positive
    numbers; none otherwise (a failed config, an older file, a damaged list)."""
    raw = entry.get("times")
    if not ok or not isinstance(raw, list) or not raw:
        return []
    if not all(isinstance(v, (int, float)) and not isinstance(v, bool)
               and math.isfinite(v) and v > 0 for v in raw):
        return []
    return [float(v) for v in raw]
