"""Study spec: what to tune, on which chip, for which workload, measured how.

A spec file is AOE's JSON config (``//`` comments welcome) or TOML. Every
section is optional; the defaults are:

==========================  ===================================================
``op_name``                 ``"GemmKernel"``
``search_space``            the seed space: tile_m, tile_k, tile_n 16..256 step
                            16, pipeline 0..2, l1_prefetch, output_align (49,152
                            points). Values: a list of choices or a range
                            ``{"low", "high", "step"}`` (both ends included).
``optimization_objective``  ``"throughput"`` (tokens/s, the only objective)
``max_search_time``         none (seconds of measurement time; > 0)
``target_throughput``       none (tokens/s at which the study stops early)
``constraints``             none; a list of expressions such as
                            ``"tile_m * tile_k * 2 <= l0a_size"``
``hardware``                ``{"soc": "Ascend910B2"}``; ``soc`` may also be the
                            path of a profile .json (relative to the spec), or
                            ``"profile"`` may hold one inline
``workload``                ``{"model": "qwen2.5-7b", "phase": "decode", "batch":
                            1, "seq_len": 1024, "tp": 1, "dtype": "fp16"}``.
                            One source of GEMMs: ``model`` (built-in),
                            ``hf_config`` (a Hugging Face config.json path),
                            ``shapes`` (a CSV/JSON shape list path),
                            ``msprof`` (an op_summary CSV path; ``steps``,
                            ``device``, ``max_shapes``), or one GEMM ``{"gemm": {"M", "K",
                            "N", "dtype"}}``. ``batch``/``seq_len`` may be
                            lists (serving buckets, merged; ``weights``: steps
                            of each per cycle); ``tp``: tensor-parallel cards;
                            ``name``, ``tokens_per_step``, ``fixed_s`` for
                            file sources. Paths are relative to the spec; the
                            canonical form keeps the files' content
                            (docs/WORKLOADS.md)
``baseline``                the default of each tuned parameter (params.py) when
                            all are among the choices and feasible, else none;
                            ``null`` for none. Missing tuned parameters take
                            their default.
``backend``                 ``{"name": "simulator"}`` (noise 0); other keys are
                            the backend's options
``accuracy``                ``{"max_relative_error": 0.01}``: the relative error
                            vs. the unquantized result that an int8-quantized
                            config may have before it counts as failed (1%: the
                            usual per-GEMM tolerance for int8 inference)
``race``                    ``{"epsilon": 0.01, "confidence": 0.95, "budget": 0.2,
                            "contenders": 5, "allocation": "pairs",
                            "park": 0.2, "patience": null}``:
                            how the winner is certified after the search
                            (:mod:`.race`)
==========================  ===================================================

The parsed file (``document``) is kept; :meth:`StudySpec.canonical` is the
normalised form that a study stores and compares to decide whether a spec
describes the same study.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.backends.registry import BACKENDS, backend_class, backend_options
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import (
    ProfileError,
    SocProfile,
    available_socs,
    load_profile,
    profile_from_dict,
)
from aoe_optuna.space.constraints import ExpressionRule, Rule
from aoe_optuna.space.params import KNOWN_PARAMS, to_code
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.backend import option_error
from aoe_optuna.spec.export_target import ExportTarget, export_rules, export_target
from aoe_optuna.spec.format import Section, SpecError, check_plain, read_document
from aoe_optuna.spec.prior import PriorSource, parse_prior
from aoe_optuna.spec.race import RaceSettings, parse_race
from aoe_optuna.spec.space import (
    SEED_SPACE,
    build_space,
    categories_of,
    expression_names,
    parse_baseline,
    parse_constraints,
    parse_params,
)
from aoe_optuna.spec.workload import DEFAULT_MODEL, parse_workload, study_name_part
from aoe_optuna.workload.gemm import Workload

__all__ = ["SpecError", "StudySpec", "load_spec", "spec_from_dict"]

TOP_KEYS = (
    "op_name", "search_space", "optimization_objective", "max_search_time",
    "target_throughput", "constraints", "hardware", "workload", "baseline", "backend",
    "accuracy", "race", "prior",
)
OBJECTIVES = ("throughput",)
DEFAULT_SOC = "Ascend910B2"
DEFAULT_BACKEND = "simulator"  # the one whose studies' names do not name it
DEFAULT_MAX_RELATIVE_ERROR = 0.01
COMPILE_OPTIONS = ("opt_level", "schedule", "unroll_factor", "layout")
_OP_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.-]{0,99}")


@dataclass
class StudySpec:
    """A checked study spec: the objects a study needs, plus the document they came from."""

    source: str
    document: dict
    op_name: str
    objective: str
    max_search_time: float | None
    target_throughput: float | None
    profile: SocProfile
    workload: Workload
    space: SearchSpace
    baseline: dict | None
    backend: dict
    accuracy: dict
    # the backend's class, looked up once when the spec is read: what a holder of the
    # spec asks of its backend (modelled or timed, its roofline, its noise...)
    backend_kind: type[BackendBase]
    workload_doc: dict | None = None  # canonical workload section
    hardware_doc: dict | None = None  # canonical hardware section
    backend_space: bool = False  # the space came from the backend, not search_space
    race: RaceSettings = RaceSettings()  # how the winner is certified after the search
    race_doc: dict | None = None  # the race section as given (None: the defaults)
    prior: PriorSource | None = None  # where GP-UCB's prior comes from (spec/prior.py)
    prior_doc: Any = None  # the ``prior`` section as given (None: the backend's default)

    @property
    def kernel_runs_on_soc(self) -> bool:
        """Whether the backend runs the kernel on the profile's SoC (its cube cores)."""
        return self.backend_kind.runs_on_soc

    @property
    def export(self) -> ExportTarget:
        """How the best config leaves the study: which kernel, or why none."""
        return export_target(self.space.names, [g.dtype for g in self.workload.gemms],
                             self.profile, self.backend_space, self.backend_kind.runs_on_soc)

    @property
    def timing_noise(self) -> float | None:
        """Relative noise of one of this study's timings (None: nothing to re-time)."""
        return self.backend_kind.timing_noise(backend_options(self.backend))

    @property
    def exact_model(self) -> bool:
        """Whether an exhaustive search of the backend is the true optimum (the simulator):
        its figures are a model's, not timings."""
        return self.backend_kind.exact_model

    def default_study_name(self) -> str:
        """``<op>-<soc>-<workload>`` plus what makes this study differ from its siblings.

        E.g. ``GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1``; ``-compile`` when
        compile options are tuned, ``-quant`` with quantization, ``-<backend>``
        off the default backend (measurements of different backends must not mix).
        """
        what, dtype = study_name_part(self.workload_doc or {}, self.workload)
        parts = [self.op_name]
        if not self.backend_space:
            parts += [self.profile.soc, what]
            if dtype != "fp16":
                parts.append(dtype)
            if any(n in self.space.names for n in COMPILE_OPTIONS):
                parts.append("compile")
            if "quantization" in self.space.names:
                parts.append("quant")
        if self.backend["name"] != DEFAULT_BACKEND:
            parts.append(self.backend["name"])
        return "-".join(parts)

    def roofline_tokens_per_s(self) -> float | None:
        """The best tokens/s any tiling could reach on the SoC (None off the Ascend backends).

        A CPU kernel or a replayed GPU kernel is not bound by the SoC profile's
        roofline, so no fraction of it is reported for those.
        """
        if self.backend_space or not self.backend_kind.has_roofline():
            return None
        return self.workload.roofline_tokens_per_s(self.profile)

    def canonical(self) -> dict:
        """The normalised document: every default filled in, every value spelled canonically.

        Two specs describe the same study exactly when their canonical forms are
        equal; ``spec_from_dict(spec.canonical())`` rebuilds an equal spec.
        """
        out: dict[str, Any] = {
            "op_name": self.op_name,
            "optimization_objective": self.objective,
            "max_search_time": self.max_search_time,
            "target_throughput": self.target_throughput,
        }
        if not self.backend_space:
            out["search_space"] = {p.name: list(p.choices) for p in self.space.params}
        out["constraints"] = [
            r.text if r.name == r.text else {"name": r.name, "expression": r.text}
            for r in self.space.rules if hasattr(r, "text")
        ]
        out["hardware"] = dict(self.hardware_doc or {"soc": self.profile.soc})
        out["workload"] = json.loads(json.dumps(self.workload_doc))
        out["baseline"] = dict(self.baseline) if self.baseline is not None else None
        out["backend"] = dict(self.backend)
        out["accuracy"] = dict(self.accuracy)
        if self.race_doc is not None:  # only when given: studies made before it compare equal
            out["race"] = self.race.as_doc()
        if self.prior_doc is not None:  # absent: the backend's default, as before the key
            out["prior"] = self.prior_doc
        return out


def load_spec(path: str | Path) -> StudySpec:
    """Read and check a spec file (JSON with comments, or TOML)."""
    return spec_from_dict(read_document(path), source=str(path))


def spec_from_dict(document: dict, source: str = "<stored>") -> StudySpec:
    """Check a parsed spec document and build everything a study needs from it."""
    check_plain(document, source)
    top = Section(source, "", document, "an object at the top level")
    top.check_keys(TOP_KEYS)
    op_name = top.string("op_name", "GemmKernel")
    if not _OP_NAME.fullmatch(op_name):  # match() lets "x\n" through: $ matches before it
        raise top.error("op_name", "a name of letters, digits, '_', '.', '-' (up to 100)",
                        op_name)
    objective = top.string("optimization_objective", "throughput", OBJECTIVES)
    max_time = top.number("max_search_time", None, low=0.0, low_open=True)
    target = top.number("target_throughput", None, low=0.0, low_open=True)
    profile, hardware_doc = _hardware(top.section("hardware"), source)
    workload, workload_doc = _workload(top.section("workload"), profile)
    backend = _backend(top.section("backend"))
    kind = _backend_class_or_none(backend)
    backend = _resolved_backend(backend, kind, source)
    workload = _backend_workload(top, source, backend, kind, workload_doc) or workload
    accuracy_sec = top.section("accuracy")
    accuracy_sec.check_keys(("max_relative_error",))
    accuracy = {"max_relative_error": accuracy_sec.number(
        "max_relative_error", DEFAULT_MAX_RELATIVE_ERROR, low=0.0, high=1.0)}
    race = parse_race(top.section("race"))
    race_doc = race.as_doc() if top.has("race") else None
    space, backend_space = _space(top, source, profile, workload, backend, kind)
    kind = kind or backend_class(backend["name"])  # _space reported one that won't import
    known = not backend_space
    baseline = parse_baseline(source, document, space, known)
    prior_doc = document.get("prior")
    prior = parse_prior(prior_doc, source, kind)
    return StudySpec(
        source=source, document=document, op_name=op_name, objective=objective,
        max_search_time=max_time, target_throughput=target, profile=profile,
        workload=workload, space=space, baseline=baseline, backend=backend,
        accuracy=accuracy, workload_doc=workload_doc, hardware_doc=hardware_doc,
        backend_space=backend_space, backend_kind=kind, race=race, race_doc=race_doc,
        prior=prior,
        prior_doc=None if prior_doc is None else json.loads(json.dumps(prior_doc)),
    )


def _hardware(section: Section, source: str) -> tuple[SocProfile, dict[str, Any]]:
    """The SoC profile: a shipped one by name, a user file by path, or an inline one."""
    section.check_keys(("soc", "profile"))
    if section.has("profile"):
        raw = section.data["profile"]
        where = f"{source}: hardware.profile"
        try:
            profile = profile_from_dict(raw, where)
        except ProfileError as exc:
            raise section.error("profile", "a valid SoC profile", raw=str(exc)) from None
        if section.has("soc") and section.data["soc"] != profile.soc:
            raise section.error("soc", f"the inline profile's soc {profile.soc!r}",
                                section.data["soc"])
        return profile, {"soc": profile.soc, "profile": raw}
    soc = section.string("soc", DEFAULT_SOC)
    if soc in available_socs():
        return load_profile(soc), {"soc": soc}
    if not soc.endswith(".json"):
        raise section.error("soc", f"one of {available_socs()} or a profile .json path", soc)
    path = Path(soc)
    if not path.is_absolute() and not source.startswith("<"):
        path = Path(source).parent / path
    if not path.is_file():
        raise section.error("soc", "an existing profile file", raw=f"{soc!r} (not found)")
    try:
        raw = json.loads(path.read_text())
        profile = profile_from_dict(raw, str(path))
    except (ValueError, ProfileError) as exc:
        raise section.error("soc", "a valid SoC profile file", raw=str(exc)) from None
    return profile, {"soc": profile.soc, "profile": raw}


def _workload(section: Section, profile: SocProfile) -> tuple[Workload, dict[str, Any]]:
    """One GEMM, a model's forward step (built-in or Hugging Face config, over serving
    buckets), a shape list or an msprof profile (spec/workload.py)."""
    return parse_workload(section, profile)


def _backend_workload(top: Section, source: str, backend: dict[str, Any],
                      cls: type[BackendBase] | None,
                      workload_doc: dict[str, Any]) -> Workload | None:
    """The backend's own workload (a replayed kernel: one op, tokens/s = 1/latency), if any."""
    if cls is None:
        return None
    options = backend_options(backend)
    try:
        workload = cls.workload(options, source)
    except ValueError as exc:
        raise option_error(source, options, exc, "a backend workload") from None
    if workload is not None and workload_doc != DEFAULT_MODEL:
        raise top.error("workload", f"no workload: the {backend['name']!r} backend defines "
                        "its own", top.data.get("workload"))
    return workload


def _backend_class_or_none(backend: dict[str, Any]) -> type[BackendBase] | None:
    """The backend's class (None if it won't import: that is reported where the space
    is built)."""
    try:
        return backend_class(backend["name"])
    except ImportError:
        return None


def _resolved_backend(backend: dict[str, Any], cls: type[BackendBase] | None,
                      source: str) -> dict[str, Any]:
    """Options as the backend spells them wherever the spec is read (absolute paths, ...)."""
    if cls is None:
        return backend
    options = backend_options(backend)
    try:
        resolved = cls.resolve_options(options, source)
    except ValueError as exc:
        raise option_error(source, options, exc, "valid backend options") from None
    return {"name": backend["name"], **resolved}


def _backend(section: Section) -> dict[str, Any]:
    name = section.string("name", DEFAULT_BACKEND)
    if name not in BACKENDS:
        raise section.error("name", f"one of {sorted(BACKENDS)}", name)
    options = backend_options(dict(section.data))
    try:
        json.dumps(options)
    except (TypeError, ValueError):
        raise section.error(None, "options of plain JSON values", options) from None
    return {"name": name, **options}


def _space(top: Section, source: str, profile: SocProfile, workload: Workload,
           backend: dict[str, Any], cls: type[BackendBase] | None) -> tuple[SearchSpace, bool]:
    """The search space: from ``search_space`` + hardware rules, or from the backend."""
    name = backend["name"]
    if cls is None:
        try:
            cls = backend_class(name)  # raises the import error to report
        except ImportError as exc:
            raise top.error("backend.name", "a backend whose module imports",
                            raw=f"{name!r} ({type(exc).__name__}: {exc})") from None
    constraints = top.data.get("constraints")
    options = backend_options(backend)
    try:
        base = cls.search_space(options, source)
    except ValueError as exc:
        raise option_error(source, options, exc, "a backend space") from None
    if base is not None:
        if "search_space" in top.data:
            raise top.error("search_space", f"no search_space: the {name!r} backend defines "
                            "its own space", top.data["search_space"])
        constants = {k: v for k, v in base.fixed.items()
                     if isinstance(v, (int, float)) and not isinstance(v, bool)}
        names = expression_names(base.params, constants)
        rules = _own_constraints(
            parse_constraints(source, constraints, names, categories_of(base.params)),
            base.rules)
        space = build_space(source, base.params, [*base.rules, *rules], bool(rules), base.fixed)
        return space, True
    params = parse_params(Section(source, "search_space", top.data.get("search_space",
                                                                       SEED_SPACE)))
    tuned = {p.name for p in params}
    constants: dict[str, float] = dict(profile.expression_names())
    for pname, info in KNOWN_PARAMS.items():
        if pname not in tuned:
            constants[pname] = to_code(pname, info.default)
    names = expression_names(params, constants)
    given = [*_device_rules(cls, profile, workload), *_kernel_rules(cls, profile, workload, params)]
    rules = _own_constraints(
        parse_constraints(source, constraints, names, categories_of(params)), given)
    space = build_space(source, params, [*rules, *given], bool(rules))
    return space, False


def _own_constraints(parsed: list[ExpressionRule], given: Sequence[Rule]) -> list[ExpressionRule]:
    """The spec's constraints less those the backend or the hardware adds itself.

    A spec's canonical form lists every expression rule of its space, a backend's (the
    cpu backend's tile rules) among them, so a spec rebuilt from it (a stored spec)
    names them again; each is kept once, so the rebuilt spec equals the one stored."""
    own = {(r.name, r.text) for r in given if isinstance(r, ExpressionRule)}
    return [r for r in parsed if (r.name, r.text) not in own]


def _kernel_rules(cls: type[BackendBase], profile: SocProfile, workload: Workload,
                  params: list) -> list:
    """The rules of the kernel the study exports to (spec/export_target.py): a config
    that kernel lacks is never proposed, so the printed export of the best one works."""
    target = export_target([p.name for p in params], [g.dtype for g in workload.gemms],
                           profile, False, cls.runs_on_soc)
    return export_rules(target, profile, workload.dtype, params)


def _device_rules(cls: type[BackendBase], profile: SocProfile, workload: Workload) -> list:
    """The rules of the device that runs the kernel: the Ascend AI core's, unless the
    backend measures on another device and says what its own rules are (the CPU kernel)."""
    own = None if cls is None else cls.device_rules(profile, workload.dtype)
    if own is not None:
        return list(own)
    return list(hardware_rules(profile, workload.dtype))

