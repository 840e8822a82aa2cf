"""One knowledge base entry: its schema, its validation and its key.

A GEMM entry is keyed by (SoC, op, dtype, M, K, N, layout) (:data:`KEY_FIELDS`).
An attention or vector kernel entry (``kind`` "attention" or "vector": the step
part of its problem; GEMM entries carry no ``kind``, so knowledge bases written
before these kinds load unchanged) keys its problem instead of M, K, N and a
layout: the fields its problem type lists for its op (``KB_FIELDS``; e.g. decode
attention's, op ``decode_attention``: batch, heads, head_dim, context, page size
and KV layout; a vector kernel's rows and width), for every problem the
simulator models (:data:`~aoe_optuna.aicore.layer_models.LAYER_MODELS`).
Every entry read from a file or merged passes :func:`validate_entry`, so the
store, the lookup and the C header trust what they hold: among the rest, its config
is a config of the op's space (a GEMM's tunables, each within the values a spec may
give it; an attention or vector kernel's tiling parameters, all of them, each one of
its choices), so no entry names a parameter nothing measured, or leaves a tiling to
defaults it was never measured with.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

from aoe_optuna.aicore.layer_models import LAYER_MODELS
from aoe_optuna.export.kb_band import checked_band
from aoe_optuna.export.kb_figure import CALL_UNIT, STEP_UNIT
from aoe_optuna.hardware.profile import DTYPE_BYTES
from aoe_optuna.kb_file import KBFileError
from aoe_optuna.space.layer_problem import Domain, ProblemFields
from aoe_optuna.space.params import (
    KNOWN_PARAMS,
    LAYOUTS,
    ParamError,
    canonical_value,
)
from aoe_optuna.spec.space import INT_BOUNDS
from aoe_optuna.study.storage.redact import redact_url
from aoe_optuna.workload.gemm import MAX_DIM

KEY_FIELDS = ("soc", "op", "dtype", "M", "K", "N", "layout")
UNKNOWN_STAMP = "unknown"  # the stamp of an entry written before stamps existed
MAX_TIES = 50
Key = tuple[Any, ...]  # a GEMM's KEY_FIELDS; (soc, op, dtype, problem text) for the others
# The problem fields of each non-GEMM op, as each problem the simulator models says
# (its ``KB_FIELDS``, aoe_optuna.space.layer_problem), and the kinds (step parts) they
# are filed under; adding a problem adds its ops here without a line of this module.
PROBLEM_FIELDS: dict[str, ProblemFields] = {
    op: fields for problem in LAYER_MODELS for op, fields in problem.KB_FIELDS.items()}
LAYER_KINDS = tuple(sorted({f.part for f in PROBLEM_FIELDS.values()}))

_NAME = re.compile(r"[A-Za-z0-9_.\-]{1,64}\Z")  # soc, op, dtype: safe in file names and C strings
_FREE_TEXT_MAX = 500


class KBError(KBFileError):
    """A knowledge base file or entry that cannot be used; one line naming file and key."""


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
    objective: str = STEP_UNIT,
    date: str | None = None,
    latency_us: float | None = None,
    latency_interval_us: tuple[float, float] | None = None,
    band: Mapping[str, Any] | None = None,
    workload: str | None = None,
    m_range: tuple[int, int] | None = None,
    certified: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A validated entry. ``gain`` is relative (0.25: 25 % over the baseline) or None.

    ``certified``: where and how well the value was measured (:func:`certified_fields`:
    the value's interval, the configs tied with the winner, the probability of a
    correct selection, the race's re-timings, the environment stamp).

    ``value`` is one of the figures of :mod:`aoe_optuna.export.kb_figure`: a
    workload's step (``objective`` "tokens/s", ``workload`` its name), or a shape's
    own (``objective`` "TFLOPS", its latency, and from an operator run the
    latency's 95% interval from the re-timing of the winner).

    ``layout`` is the GM layout of A and B the config is for; when the study tuned
    ``layout``, the config's value must be the same. The storage URL is kept
    without its password; ``date`` defaults to now (UTC, ISO 8601).

    ``m_range``: a kernel of a kernel set (``aoe-tune kernel-set``) serves every M from
    low to high (M, the entry's anchor, among them); its value is the TFLOPS of the
    mix over that range.
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
    if workload is not None:
        entry["workload"] = workload
    if m_range is not None:
        entry["m_range"] = list(m_range)
    entry.update(certified or {})
    return validate_entry(entry)


def certified_fields(interval: tuple[float, float] | None, ties: list[Mapping[str, Any]],
                     pcs: float | None, race_measurements: int,
                     env: Mapping[str, str] | None) -> dict[str, Any]:
    """The optional fields of a certified entry, as :func:`make_entry` takes them."""
    out: dict[str, Any] = {"ties": [dict(t) for t in ties[:MAX_TIES]],
                           "race_measurements": int(race_measurements)}
    if interval is not None:
        out["interval"] = [float(interval[0]), float(interval[1])]
    if pcs is not None:
        out["pcs"] = round(float(pcs), 4)
    if env is not None:
        out["env"] = dict(env)
    return out


def entry_stamp(entry: Mapping[str, Any]) -> dict[str, str] | str:
    """The environment an entry was measured in; ``"unknown"`` for one written before
    stamps existed (it loads and saves as it is)."""
    env = entry.get("env")
    return dict(env) if isinstance(env, Mapping) else UNKNOWN_STAMP


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
    objective: str = CALL_UNIT,
    latency_us: float | None = None,
    date: str | None = None,
    band: Mapping[str, Any] | None = None,
    library_kept_us: float | None = None,
) -> dict[str, Any]:
    """A validated attention or vector kernel entry: ``problem`` as the operator run keys
    it, ``value`` calls per second (higher is better, like every entry's value);
    ``library_kept_us``: the library default kernel's time where it beats the tuned
    ``config`` and is what the run ships."""
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
    if library_kept_us is not None:
        entry["library_kept_us"] = library_kept_us
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
    where = f"{where} ({describe_key(entry_key(out))})"
    out["config"] = _checked_gemm_config(where, entry["config"])
    if out["config"].get("layout", out["layout"]) != out["layout"]:
        raise KBError(f"{where}: config.layout={out['config']['layout']!r} differs from the "
                      f"entry's layout {out['layout']!r}")
    out = _checked_result(entry, where, out)
    if entry.get("m_range") is not None:  # a kernel set's kernel; other entries have none
        m = out["M"]
        span = entry["m_range"]
        ok = (isinstance(span, list) and len(span) == 2 and all(_is_dim(v) for v in span)
              and span[0] <= m <= span[1])
        out["m_range"] = list(_checked(where, "m_range", span, lambda _: ok,
                                       f"[low, high]: integers with low <= M ({m}) <= high"))
    if entry.get("ties") is not None:
        ties = _checked(where, "ties", entry["ties"],
                        lambda v: isinstance(v, list) and len(v) <= MAX_TIES,
                        f"a list of at most {MAX_TIES} configs")
        out["ties"] = [_checked_gemm_config(f"{where}: ties[{i}]", t)
                       for i, t in enumerate(ties)]
    return out


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
    where = f"{where} ({describe_key(entry_key(out))})"
    out["config"] = _checked_tiling(where, PROBLEM_FIELDS[out["op"]].tiling, entry["config"])
    out = _checked_result(entry, where, out)
    if entry.get("library_kept_us") is not None:  # the library's kernel ships, not config
        out["library_kept_us"] = float(_checked(
            where, "library_kept_us", entry["library_kept_us"], _is_positive,
            "a positive number of microseconds (the library kernel kept)"))
    return out


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
    out["objective"] = _checked(where, "objective", entry.get("objective", STEP_UNIT),
                                _is_text, "a short text")
    if entry.get("workload") is not None:  # a step's figure; entries before it have none
        out["workload"] = _checked(where, "workload", entry["workload"], _is_text,
                                   "the name of the workload whose step the value is")
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
    _checked_certified(entry, where, out)
    if entry.get("band") is not None:  # optional: entries written before bands have none
        out["band"] = _checked(where, "band", entry["band"], lambda v: checked_band(v) is not None,
                               "{kind, median, high, high_is} with errors from 0 (or null)")
        out["band"] = checked_band(out["band"])
    return out


def _checked_certified(entry: Mapping[str, Any], where: str, out: dict[str, Any]) -> None:
    """The race's fields (all optional: entries written before races have none)."""
    interval = entry.get("interval")
    if interval is not None:
        ok = (isinstance(interval, list) and len(interval) == 2
              and all(_is_positive(v) for v in interval) and interval[0] <= interval[1])
        out["interval"] = [float(v) for v in _checked(
            where, "interval", interval, lambda _: ok, "[low, high] of the value")]
    if entry.get("pcs") is not None:
        out["pcs"] = float(_checked(where, "pcs", entry["pcs"],
                                    lambda v: _is_finite(v) and 0 <= v <= 1,
                                    "a probability from 0 to 1"))
    if entry.get("race_measurements") is not None:
        out["race_measurements"] = _checked(
            where, "race_measurements", entry["race_measurements"],
            lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 0,
            "a count of re-timings")
    env = entry.get("env")
    if env is not None:
        ok = (isinstance(env, Mapping) and 0 < len(env) <= 20
              and all(_is_name(k) and _is_text(v) for k, v in env.items()))
        out["env"] = dict(_checked(where, "env", env, lambda _: ok,
                                   "an object of names to texts (the environment stamp)"))


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


def _checked_gemm_config(where: str, config: Any) -> dict[str, Any]:
    """A config of the GEMM tunables, each value spelled as params.py does and within
    the values a spec's search_space may give it."""
    if not isinstance(config, Mapping) or not config:
        raise KBError(f"{where}: config: expected a non-empty object of parameter values")
    out: dict[str, Any] = {}
    for name, value in config.items():
        if name not in KNOWN_PARAMS:
            raise KBError(f"{where}: config: expected the GEMM's parameters "
                          f"({', '.join(KNOWN_PARAMS)}), got an unknown parameter {name!r}")
        try:
            out[name] = canonical_value(name, value)
        except ParamError as exc:
            raise KBError(f"{where}: config.{name}: {exc}") from None
        if name in INT_BOUNDS:
            lo, hi = INT_BOUNDS[name]
            _checked(where, f"config.{name}", out[name], lambda v, lo=lo, hi=hi: lo <= v <= hi,
                     f"an integer from {lo} to {hi}")
    return out


def _checked_tiling(where: str, tiling: Mapping[str, Domain], config: Any) -> dict[str, Any]:
    """A config of exactly the kernel's tiling parameters, each one of its choices (an
    integer from 1 up where the choices depend on the problem and chip)."""
    if not isinstance(config, Mapping) or set(config) != set(tiling):
        got = sorted(map(str, config)) if isinstance(config, Mapping) else config
        raise KBError(f"{where}: config: expected the op's tiling parameters "
                      f"{', '.join(tiling)}, got {got!r}")
    out: dict[str, Any] = {}
    for name, choices in tiling.items():
        value = config[name]
        if choices is None:
            out[name] = _checked(where, f"config.{name}", value, _is_dim,
                                 f"an integer from 1 to {MAX_DIM}")
        else:
            out[name] = _checked(where, f"config.{name}", value,
                                 lambda v, c=choices: isinstance(v, (int, str))
                                 and not isinstance(v, bool) and v in c,
                                 f"one of {list(choices)}")
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
