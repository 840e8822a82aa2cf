"""The knowledge base: the best known config per (SoC, op, dtype, M, K, N, layout), and per
(SoC, op, dtype, problem) for the kernels an operator run tunes beside the GEMMs.

One JSON file collects what every study found. Re-exporting a study merges its
entries and keeps, per key, the entry with the higher objective value. Runtime
code asks :func:`lookup` (or the C function of :func:`write_c_header`) for the
config of a shape; a shape that was never tuned gets the entry of the nearest
tuned shape of the same SoC, op and dtype, nearness being the Euclidean distance
between (log2 M, log2 K, log2 N): doubling a dimension costs 1 whatever its size.

An attention or vector kernel entry (``kind`` "attention" or "vector": the step
part of its problem; GEMM entries carry no ``kind``, so knowledge bases written
before these kinds load unchanged) keys its problem instead of M, K, N and a
layout: the fields its problem type lists for its op (``KB_FIELDS``; e.g. decode
attention's, op ``decode_attention``: batch, heads, head_dim, context, page size
and KV layout; a vector kernel's rows and width), for every problem the
simulator models (:data:`~aoe_optuna.backends.simulator.layer_models.LAYER_MODELS`).
:func:`lookup_layer_op` finds the exact problem; the C header holds the GEMM
entries only.
"""

from __future__ import annotations

import json
import math
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.backends.simulator.layer_models import LAYER_MODELS
from aoe_optuna.export.kb_band import checked_band
from aoe_optuna.hardware.profile import DTYPE_BYTES
from aoe_optuna.space.layer_problem import ProblemFields
from aoe_optuna.space.params import (
    KNOWN_PARAMS,
    LAYOUTS,
    OPERAND_LAYOUTS,
    ParamError,
    canonical_value,
    to_code,
)
from aoe_optuna.study.redact import redact_url
from aoe_optuna.workload.gemm import MAX_DIM

FORMAT = "aoe-kb"
VERSION = 1
KEY_FIELDS = ("soc", "op", "dtype", "M", "K", "N", "layout")
Key = tuple[Any, ...]  # a GEMM's KEY_FIELDS; (soc, op, dtype, problem text) for the others
# The problem fields of each non-GEMM op, as each problem the simulator models says
# (its ``KB_FIELDS``, aoe_optuna.space.layer_problem), and the kinds (step parts) they
# are filed under; adding a problem adds its ops here without a line of this module.
PROBLEM_FIELDS: dict[str, ProblemFields] = {
    op: fields for problem in LAYER_MODELS for op, fields in problem.KB_FIELDS.items()}
LAYER_KINDS = tuple(sorted({f.part for f in PROBLEM_FIELDS.values()}))

_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")  # soc, op, dtype: safe in file names and C strings
_IDENT = re.compile(r"[A-Za-z_]\w*\Z")
_FREE_TEXT_MAX = 500
TIE_SCALE = 1048576.0  # 2**20: squared log2 distances are compared on this grid
# Config fields of the C table, in struct order; a parameter an entry's study did
# not tune is written with its default (the value the study measured with).
# The catlass knobs follow the simple kernel's, so a runtime that dispatches on shape
# finds a catlass instantiation's arguments too (layout_a/b as AOE_OPERAND_LAYOUT_*).
C_FIELDS = ("tile_m", "tile_k", "tile_n", "pipeline", "l1_prefetch", "output_align",
            "unroll_factor", "quantization", "l1_k", "swizzle_offset", "swizzle_direction",
            "preload", "unit_flag", "split_k", "padding", "layout_a", "layout_b")


class KBError(ValueError):
    """A knowledge base file or entry that cannot be used; one line naming file and key."""


# --- entries ------------------------------------------------------------------------------------


def make_entry(
    soc: str,
    op: str,
    dtype: str,
    M: int,  # noqa: N803 - the GEMM's own names
    K: int,  # noqa: N803
    N: int,  # noqa: N803
    layout: str,
    config: Mapping[str, Any],
    value: float,
    gain: float | None,
    study: str,
    storage: str | None,
    *,
    objective: str = "tokens/s",
    date: str | None = None,
    latency_us: float | None = None,
    latency_interval_us: tuple[float, float] | None = None,
    band: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated entry. ``gain`` is relative (0.25: 25 % over the baseline) or None.

    An entry of an operator study (one study per shape) carries the shape's own
    figures: ``objective`` "TFLOPS", its latency and the latency's 95% interval
    from the re-timing of the winner.

    ``layout`` is the GM layout of A and B the config is for; when the study tuned
    ``layout``, the config's value must be the same. The storage URL is kept
    without its password; ``date`` defaults to now (UTC, ISO 8601).
    """
    entry = {
        "soc": soc, "op": op, "dtype": dtype, "M": M, "K": K, "N": N, "layout": layout,
        "config": dict(config), "value": value, "objective": objective, "gain": gain,
        "study": study, "storage": None if storage is None else redact_url(str(storage)),
        "date": date or datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if latency_us is not None:
        entry["latency_us"] = latency_us
    if latency_interval_us is not None:
        entry["latency_interval_us"] = list(latency_interval_us)
    if band is not None:
        entry["band"] = band
    return validate_entry(entry)


def make_layer_entry(
    soc: str,
    kind: str,
    op: str,
    dtype: str,
    problem: Mapping[str, Any],
    config: Mapping[str, Any],
    value: float,
    gain: float | None,
    study: str,
    storage: str | None,
    *,
    objective: str = "calls/s",
    latency_us: float | None = None,
    date: str | None = None,
    band: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated attention or vector kernel entry: ``problem`` as the operator run keys
    it, ``value`` calls per second (higher is better, like every entry's value)."""
    entry: dict[str, Any] = {
        "kind": kind, "soc": soc, "op": op, "dtype": dtype, "problem": dict(problem),
        "config": dict(config), "value": value, "objective": objective, "gain": gain,
        "study": study, "storage": None if storage is None else redact_url(str(storage)),
        "date": date or datetime.now(UTC).isoformat(timespec="seconds"),
    }
    if latency_us is not None:
        entry["latency_us"] = latency_us
    if band is not None:
        entry["band"] = band
    return validate_entry(entry)


def validate_entry(entry: Mapping[str, Any], where: str = "entry") -> dict[str, Any]:
    """``entry`` checked and in canonical form (config values spelled as params.py does)."""
    kind = entry.get("kind", "gemm")
    if kind != "gemm":
        return _validate_layer_entry(entry, where)
    missing = [f for f in (*KEY_FIELDS, "config", "value", "study") if f not in entry]
    if missing:
        raise KBError(f"{where}: missing {', '.join(missing)}")
    out: dict[str, Any] = {}
    for name in ("soc", "op"):
        out[name] = _checked(where, name, entry[name], _is_name, "a name of letters, digits, _.-")
    out["dtype"] = _checked(where, "dtype", entry["dtype"], DTYPE_BYTES.__contains__,
                            f"one of {list(DTYPE_BYTES)}")
    for dim in ("M", "K", "N"):
        out[dim] = _checked(where, dim, entry[dim], _is_dim, f"an integer from 1 to {MAX_DIM}")
    out["layout"] = _checked(where, "layout", entry["layout"], LAYOUTS.__contains__,
                             f"one of {list(LAYOUTS)}")
    out["config"] = _checked_config(where, entry["config"])
    if out["config"].get("layout", out["layout"]) != out["layout"]:
        raise KBError(f"{where}: config.layout={out['config']['layout']!r} differs from the "
                      f"entry's layout {out['layout']!r}")
    return _checked_result(entry, where, out)


def _validate_layer_entry(entry: Mapping[str, Any], where: str) -> dict[str, Any]:
    """An attention or vector kernel entry: its kind, op, dtype, problem and config."""
    kind = entry.get("kind")
    if kind not in LAYER_KINDS:
        raise KBError(f"{where}: kind: expected 'gemm' (or no kind) or one of "
                      f"{list(LAYER_KINDS)}, got {kind!r}")
    missing = [f for f in ("soc", "op", "dtype", "problem", "config", "value", "study")
               if f not in entry]
    if missing:
        raise KBError(f"{where}: missing {', '.join(missing)}")
    out: dict[str, Any] = {"kind": kind}
    out["soc"] = _checked(where, "soc", entry["soc"], _is_name, "a name of letters, digits, _.-")
    ops = [op for op, f in PROBLEM_FIELDS.items() if f.part == kind]
    out["op"] = _checked(where, "op", entry["op"], ops.__contains__, f"one of {ops}")
    out["dtype"] = _checked(where, "dtype", entry["dtype"], DTYPE_BYTES.__contains__,
                            f"one of {list(DTYPE_BYTES)}")
    out["problem"] = _checked_problem(where, PROBLEM_FIELDS[out["op"]], entry["problem"])
    out["config"] = _checked_config(where, entry["config"])
    return _checked_result(entry, where, out)


def _checked_problem(where: str, spec: ProblemFields, problem: Any) -> dict[str, Any]:
    fields = spec.fields
    optional = tuple(f for f in spec.optional if isinstance(problem, Mapping) and f in problem)
    if not isinstance(problem, Mapping) or set(problem) != set(fields + optional):
        extra = f" (and optionally {', '.join(spec.optional)})" if spec.optional else ""
        raise KBError(f"{where}: problem: expected an object with exactly "
                      f"{', '.join(fields)}{extra}, got {problem!r}")
    fields += optional
    out: dict[str, Any] = {}
    for name in fields:
        if name in spec.names:
            names = spec.names[name]
            out[name] = _checked(where, f"problem.{name}", problem[name],
                                 names.__contains__, f"one of {list(names)}")
        elif name in spec.flags:
            out[name] = _checked(where, f"problem.{name}", problem[name],
                                 lambda v: isinstance(v, bool), "true or false")
        else:
            out[name] = _checked(where, f"problem.{name}", problem[name], _is_dim,
                                 f"an integer from 1 to {MAX_DIM}")
    broken = spec.rule(out) if spec.rule is not None else None
    if broken is not None:
        name, expected = broken
        raise KBError(f"{where}: problem.{name}: expected {expected}, got {out[name]!r}")
    return out


def _checked_result(entry: Mapping[str, Any], where: str, out: dict[str, Any]) -> dict[str, Any]:
    """The fields every entry has past its key and config: value, study, date..."""
    out["value"] = float(_checked(where, "value", entry["value"], _is_finite, "a finite number"))
    out["objective"] = _checked(where, "objective", entry.get("objective", "tokens/s"),
                                _is_text, "a short text")
    gain = entry.get("gain")
    out["gain"] = None if gain is None else float(
        _checked(where, "gain", gain, _is_finite, "a finite number or null"))
    out["study"] = _checked(where, "study", entry["study"], _is_text, "a non-empty text")
    storage = entry.get("storage")
    out["storage"] = None if storage is None else _checked(where, "storage", storage, _is_text,
                                                           "a storage URL or null")
    out["date"] = _checked(where, "date", entry.get("date"), _is_iso_date, "an ISO 8601 date")
    if entry.get("latency_us") is not None:
        out["latency_us"] = float(_checked(where, "latency_us", entry["latency_us"], _is_positive,
                                           "a positive number of microseconds"))
    interval = entry.get("latency_interval_us")
    if interval is not None:
        ok = (isinstance(interval, list) and len(interval) == 2
              and all(_is_positive(v) for v in interval) and interval[0] <= interval[1])
        out["latency_interval_us"] = [float(v) for v in _checked(
            where, "latency_interval_us", interval, lambda _: ok, "[low, high] in microseconds")]
    if entry.get("band") is not None:  # optional: entries written before bands have none
        out["band"] = _checked(where, "band", entry["band"], lambda v: checked_band(v) is not None,
                               "{kind, median, high, high_is} with errors from 0 (or null)")
        out["band"] = checked_band(out["band"])
    return out


def entry_key(entry: Mapping[str, Any]) -> Key:
    """The (soc, op, dtype, M, K, N, layout) a GEMM entry is stored under; (soc, op,
    dtype, problem) an attention or vector kernel entry."""
    if entry.get("kind", "gemm") != "gemm":
        return (entry["soc"], entry["op"], entry["dtype"], problem_text(entry["problem"]))
    return tuple(entry[f] for f in KEY_FIELDS)


def problem_text(problem: Mapping[str, Any]) -> str:
    """``batch=1 q_heads=28 ...``: a problem as one sortable, readable key."""
    return " ".join(f"{k}={problem[k]}" for k in problem)


def describe_key(key: Key) -> str:
    """The key as one line; a GEMM's shape MxNxK, the order of catlass's GemmCoord and of
    the operator studies' names (the key tuple itself keeps its M, K, N field order)."""
    if len(key) == 4:
        soc, op, dtype, problem = key
        return f"{soc}/{op}/{dtype} {problem}"
    soc, op, dtype, m, k, n, layout = key
    return f"{soc}/{op}/{dtype} {m}x{n}x{k} {layout}"


def is_gemm_entry(entry: Mapping[str, Any]) -> bool:
    return entry.get("kind", "gemm") == "gemm"


def _checked(where: str, name: str, value: Any, ok: Any, expected: str) -> Any:
    if not ok(value):
        raise KBError(f"{where}: {name}: expected {expected}, got {value!r}")
    return value


def _checked_config(where: str, config: Any) -> dict[str, Any]:
    if not isinstance(config, Mapping) or not config:
        raise KBError(f"{where}: config: expected a non-empty object of parameter values")
    out: dict[str, Any] = {}
    for name, value in config.items():
        if not isinstance(name, str) or not _IDENT.match(name):
            raise KBError(f"{where}: config: parameter name {name!r} is not an identifier")
        if name in KNOWN_PARAMS:
            try:
                out[name] = canonical_value(name, value)
            except ParamError as exc:
                raise KBError(f"{where}: config.{name}: {exc}") from None
        elif isinstance(value, bool) or _is_finite(value) or _is_name(value):
            out[name] = value
        else:
            raise KBError(f"{where}: config.{name}: expected a number, a bool or a name, "
                          f"got {value!r}")
    return out


def _is_name(v: Any) -> bool:
    return isinstance(v, str) and bool(_NAME.match(v))


def _is_dim(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_DIM


def _is_finite(v: Any) -> bool:
    if isinstance(v, bool):
        return False
    if isinstance(v, int):
        return abs(v) <= 2**63
    return isinstance(v, float) and math.isfinite(v)


def _is_positive(v: Any) -> bool:
    return _is_finite(v) and v > 0


def _is_text(v: Any) -> bool:
    return isinstance(v, str) and 0 < len(v) <= _FREE_TEXT_MAX


def _is_iso_date(v: Any) -> bool:
    if not isinstance(v, str):
        return False
    try:
        datetime.fromisoformat(v)
    except ValueError:
        return False
    return True


# --- the knowledge base -------------------------------------------------------------------------


@dataclass(frozen=True)
class MergeResult:
    """What :meth:`KnowledgeBase.merge` did with one entry."""

    outcome: Literal["added", "replaced", "kept"]
    entry: dict[str, Any]  # the entry the knowledge base holds now
    other: dict[str, Any] | None  # the entry that lost (None when added)

    @property
    def new_won(self) -> bool:
        return self.outcome != "kept"

    def describe(self) -> str:
        key = describe_key(entry_key(self.entry))
        unit = self.entry["objective"]
        if self.outcome == "added":
            return f"added {key}: {self.entry['value']:.6g} {unit}"
        assert self.other is not None
        won, lost = self.entry, self.other
        verb = "replaced" if self.outcome == "replaced" else "kept"
        return (f"{verb} {key}: {won['value']:.6g} {unit} (study {won['study']}) over "
                f"{lost['value']:.6g} {lost['objective']} (study {lost['study']})")


class KnowledgeBase:
    """Entries by key, read from and written to one JSON file."""

    def __init__(self, entries: Mapping[Key, dict[str, Any]] | None = None) -> None:
        self._entries: dict[Key, dict[str, Any]] = dict(entries or {})

    @classmethod
    def load(cls, path: str | os.PathLike[str]) -> KnowledgeBase:
        """The knowledge base in ``path``; an empty one when the file does not exist."""
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return cls()
        except (OSError, UnicodeDecodeError) as exc:
            raise KBError(f"{path}: cannot read the knowledge base: {exc}") from None
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as exc:
            raise KBError(f"{path}: not a knowledge base (invalid JSON: {exc.msg} at line "
                          f"{exc.lineno} column {exc.colno})") from None
        except RecursionError:
            raise KBError(f"{path}: not a knowledge base (arrays or objects nested too "
                          "deeply)") from None
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise KBError(f"{path}: not a knowledge base (expected an object with "
                          f"\"format\": \"{FORMAT}\")")
        if data.get("version") != VERSION:
            raise KBError(f"{path}: version: expected {VERSION}, got {data.get('version')!r}")
        if not isinstance(data.get("entries"), list):
            raise KBError(f"{path}: entries: expected a list")
        kb = cls()
        for i, raw_entry in enumerate(data["entries"]):
            if not isinstance(raw_entry, dict):
                raise KBError(f"{path}: entries[{i}]: expected an object")
            entry = validate_entry(raw_entry, where=f"{path}: entries[{i}]")
            key = entry_key(entry)
            if key in kb._entries:
                raise KBError(f"{path}: entries[{i}]: {describe_key(key)} appears twice")
            kb._entries[key] = entry
        return kb

    def save(self, path: str | os.PathLike[str]) -> None:
        """Write the file atomically (temporary file + rename), entries sorted by key."""
        data = {"format": FORMAT, "version": VERSION, "entries": self.entries()}
        write_atomic(path, json.dumps(data, indent=2) + "\n")

    def merge(self, entry: Mapping[str, Any], *, replace: bool = False) -> MergeResult:
        """Add ``entry`` or, for a key already held, keep the one with the higher value.

        A tie keeps the entry already held (re-exporting a study changes nothing).
        Values of different objectives cannot be compared: that is an error unless
        ``replace`` is set, which makes the new entry win whatever its value.
        """
        new = validate_entry(entry)
        key = entry_key(new)
        old = self._entries.get(key)
        if old is None:
            self._entries[key] = new
            return MergeResult("added", new, None)
        if not replace and old["objective"] != new["objective"]:
            raise KBError(
                f"{describe_key(key)}: the held entry measures {old['objective']!r} and the new "
                f"one {new['objective']!r}; values cannot be compared (replace it explicitly)"
            )
        if replace or new["value"] > old["value"]:
            self._entries[key] = new
            return MergeResult("replaced", new, old)
        return MergeResult("kept", old, new)

    def entries(self) -> list[dict[str, Any]]:
        return [self._entries[k] for k in sorted(self._entries, key=_sort_key)]

    def get(self, key: Key) -> dict[str, Any] | None:
        return self._entries.get(key)

    def __len__(self) -> int:
        return len(self._entries)

    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.entries())


def _sort_key(key: Key) -> tuple[Any, ...]:
    """GEMM entries first, in their order since version 1; then the others by problem."""
    if len(key) == 4:
        return (1, *key)
    soc, op, dtype, m, k, n, layout = key
    return (0, soc, op, dtype, m, k, n, LAYOUTS.index(layout))


# --- lookup -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class LookupResult:
    """The entry chosen for a shape: the exact one, or the nearest one and how near."""

    entry: dict[str, Any]
    exact: bool
    distance: float  # Euclidean distance in (log2 M, log2 K, log2 N); 0 when exact

    @property
    def config(self) -> dict[str, Any]:
        return self.entry["config"]

    def describe(self) -> str:
        key = describe_key(entry_key(self.entry))
        return f"exact entry {key}" if self.exact else (
            f"nearest entry {key} (distance {self.distance:.3f} in log2 shape)")


def lookup(
    kb_or_path: KnowledgeBase | str | os.PathLike[str],
    soc: str,
    op: str,
    dtype: str,
    M: int,  # noqa: N803
    K: int,  # noqa: N803
    N: int,  # noqa: N803
    layout: str | None = None,
) -> LookupResult | None:
    """The entry for this shape, or the nearest shape's; None when nothing fits.

    Candidates share ``soc``, ``op``, ``dtype`` (and ``layout`` unless it is None).
    The nearest minimises the squared distance in (log2 M, log2 K, log2 N), rounded
    to a 2**-20 grid so that equal distances tie whatever the last bit of log2; ties
    go to the higher value, then to the smaller (M, K, N, layout). The C lookup of
    :func:`write_c_header` implements the same order.
    """
    kb = kb_or_path if isinstance(kb_or_path, KnowledgeBase) else KnowledgeBase.load(kb_or_path)
    for dim, v in (("M", M), ("K", K), ("N", N)):
        if not _is_dim(v):
            raise KBError(f"lookup: {dim}: expected an integer from 1 to {MAX_DIM}, got {v!r}")
    if layout is not None and layout not in LAYOUTS:
        raise KBError(f"lookup: layout: expected one of {list(LAYOUTS)} or None, got {layout!r}")
    query = (math.log2(M), math.log2(K), math.log2(N))
    best: tuple[tuple[Any, ...], dict[str, Any]] | None = None
    for entry in kb.entries():
        if not is_gemm_entry(entry) or (entry["soc"], entry["op"], entry["dtype"]) != (
                soc, op, dtype):
            continue
        if layout is not None and entry["layout"] != layout:
            continue
        d2 = _squared_distance(query, entry)
        rank = (_tie_bucket(d2), -entry["value"], d2)
        if best is None or rank < best[0]:  # entries() is sorted: the first of equals wins
            best = (rank, entry)
    if best is None:
        return None
    entry = best[1]
    exact = (entry["M"], entry["K"], entry["N"]) == (M, K, N)
    return LookupResult(entry, exact, 0.0 if exact else math.sqrt(best[0][2]))


def lookup_layer_op(kb_or_path: KnowledgeBase | str | os.PathLike[str], soc: str, op: str,
                    dtype: str, problem: Mapping[str, Any]) -> dict[str, Any] | None:
    """The attention or vector kernel entry of exactly this problem, or None.

    No nearest match: a tiling of another problem (another context's KV split,
    another width's tile) is not a safe guess for this one.
    """
    kb = kb_or_path if isinstance(kb_or_path, KnowledgeBase) else KnowledgeBase.load(kb_or_path)
    return kb.get((soc, op, dtype, problem_text(problem)))


def _tie_bucket(d2: float) -> float:
    """Squared distances closer than 2**-20 are a tie (rounding noise of log2 and FMA)."""
    return math.floor(d2 * TIE_SCALE + 0.5)


def _squared_distance(query: tuple[float, float, float], entry: Mapping[str, Any]) -> float:
    total = 0.0
    for q, dim in zip(query, ("M", "K", "N"), strict=True):
        d = q - math.log2(entry[dim])
        total += d * d
    return total


# --- the C header -------------------------------------------------------------------------------


def write_c_header(kb: KnowledgeBase, path: str | os.PathLike[str]) -> None:
    """Write :func:`c_header` for ``kb`` to ``path`` atomically."""
    write_atomic(path, c_header(kb, guard=_guard_for(Path(path).name)))


def c_header(kb: KnowledgeBase, guard: str = "AOE_KB_H") -> str:
    """A self-contained C99/C++ header: the table per (soc, op, dtype) and ``aoe_kb_lookup``.

    Each table is sorted by (M, K, N, layout) and stores log2 of each dimension as an
    exact hexadecimal float, so the C lookup ranks entries exactly as :func:`lookup`.
    Link with ``-lm`` (the query's log2).
    """
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for entry in filter(is_gemm_entry, kb.entries()):
        groups.setdefault((entry["soc"], entry["op"], entry["dtype"]), []).append(entry)
    n_gemm = sum(len(v) for v in groups.values())
    defaults = {name: KNOWN_PARAMS[name].default for name in C_FIELDS}
    lines = [
        f"/* Generated by aoe_optuna (export.kb.write_c_header) from {n_gemm} GEMM entries;",
        " * regenerate it instead of editing it. Tuned configs per (soc, op, dtype, M, K, N,",
        " * layout); aoe_kb_lookup() returns the exact shape's entry or the nearest one",
        " * (Euclidean distance in log2 M, log2 K, log2 N, compared on a 2^-20 grid of its",
        " * square; ties: higher value, then table order).",
        " * Parameters a study did not tune hold their defaults. Link with -lm. */",
        f"#ifndef {guard}",
        f"#define {guard}",
        "",
        "#include <math.h>",
        "#include <stddef.h>",
        "#include <stdint.h>",
        "#include <string.h>",
        "",
    ]
    for i, name in enumerate(LAYOUTS):
        lines.append(f"#define AOE_LAYOUT_{name.upper()} {i}")
    for i, name in enumerate(OPERAND_LAYOUTS):
        lines.append(f"#define AOE_OPERAND_LAYOUT_{name.upper()} {i}")
    for name in KNOWN_PARAMS["pipeline"].names or ():
        lines.append(f"#define AOE_PIPELINE_{name.upper()} {to_code('pipeline', name)}")
    lines += [
        "#define AOE_LAYOUT_ANY (-1)",
        f"#define AOE_KB_TIE_SCALE {TIE_SCALE!r} /* squared distances are compared on a grid */",
        "",
        "typedef struct {",
        "    uint32_t m, k, n;",
        "    int32_t layout; /* AOE_LAYOUT_* */",
        *(f"    int32_t {name};" for name in C_FIELDS),
        "    double value; /* the objective the entry reached */",
        "    double log2_m, log2_k, log2_n;",
        "} aoe_kb_entry_t;",
        "",
        "typedef struct {",
        "    const char *soc, *op, *dtype;",
        "    const aoe_kb_entry_t *entries;",
        "    size_t count;",
        "} aoe_kb_table_t;",
        "",
    ]
    for t, ((soc, op, dtype), entries) in enumerate(groups.items()):
        lines.append(f"/* {soc} {op} {dtype} */")
        lines.append(f"static const aoe_kb_entry_t aoe_kb_table_{t}[] = {{")
        for e in entries:
            config = {**defaults, **e["config"]}
            values = [e["M"], e["K"], e["N"], to_code("layout", e["layout"])]
            codes = [to_code(name, config[name]) for name in C_FIELDS]
            too_big = [n for n, c in zip(C_FIELDS, codes, strict=True) if not -(2**31) <= c < 2**31]
            if too_big:
                raise KBError(f"{describe_key(entry_key(e))}: {', '.join(too_big)} does not fit "
                              f"the int32 fields of the C table")
            values += codes
            logs = [math.log2(e[d]).hex() for d in ("M", "K", "N")]
            lines.append(f"    {{{', '.join(map(str, values))}, {e['value']!r}, "
                         f"{', '.join(logs)}}},")
        lines.append("};")
    lines.append("static const aoe_kb_table_t aoe_kb_tables[] = {")
    for t, ((soc, op, dtype), entries) in enumerate(groups.items()):
        lines.append(f'    {{"{soc}", "{op}", "{dtype}", aoe_kb_table_{t}, {len(entries)}}},')
    if not groups:
        lines.append("    {NULL, NULL, NULL, NULL, 0},")
    lines += [
        "};",
        f"static const size_t aoe_kb_table_count = {len(groups)};",
        "",
        _C_LOOKUP,
        f"#endif /* {guard} */",
        "",
    ]
    return "\n".join(lines)


_C_LOOKUP = """\
/* The entry for (soc, op, dtype, m, k, n), layout AOE_LAYOUT_ANY or AOE_LAYOUT_*; NULL when
 * no entry fits. *exact (may be NULL) is set to 1 for the shape's own entry, 0 for the
 * nearest; *distance (may be NULL) to the distance in log2 shape. */
static inline const aoe_kb_entry_t *aoe_kb_lookup(const char *soc, const char *op,
                                                  const char *dtype, uint32_t m, uint32_t k,
                                                  uint32_t n, int32_t layout, int *exact,
                                                  double *distance)
{
    const aoe_kb_entry_t *best = NULL;
    double best_d2 = 0.0, best_bucket = 0.0;
    const double qm = log2((double)m), qk = log2((double)k), qn = log2((double)n);
    size_t t, i;
    if (m == 0 || k == 0 || n == 0) return NULL;
    for (t = 0; t < aoe_kb_table_count; ++t) {
        const aoe_kb_table_t *table = &aoe_kb_tables[t];
        if (strcmp(table->soc, soc) != 0 || strcmp(table->op, op) != 0 ||
            strcmp(table->dtype, dtype) != 0) continue;
        for (i = 0; i < table->count; ++i) {
            const aoe_kb_entry_t *e = &table->entries[i];
            double dm, dk, dn, d2, bucket;
            if (layout != AOE_LAYOUT_ANY && e->layout != layout) continue;
            dm = qm - e->log2_m;
            dk = qk - e->log2_k;
            dn = qn - e->log2_n;
            d2 = 0.0;
            d2 += dm * dm;
            d2 += dk * dk;
            d2 += dn * dn;
            bucket = floor(d2 * AOE_KB_TIE_SCALE + 0.5);
            if (best == NULL || bucket < best_bucket ||
                (bucket == best_bucket && e->value > best->value)) {
                best = e;
                best_d2 = d2;
                best_bucket = bucket;
            }
        }
    }
    if (best != NULL) {
        int same = best->m == m && best->k == k && best->n == n;
        if (exact != NULL) *exact = same;
        if (distance != NULL) *distance = same ? 0.0 : sqrt(best_d2);
    }
    return best;
}
"""


def _guard_for(filename: str) -> str:
    guard = re.sub(r"\W", "_", filename).upper()
    return guard if guard and not guard[0].isdigit() else f"AOE_{guard}"
