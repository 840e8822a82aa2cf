"""The ``workload`` section of a spec, and the canonical form a study stores of it.

Exactly one source: ``model`` (the built-in table, the default), ``hf_config``
(a Hugging Face config.json), ``shapes`` (a shape list), ``msprof`` (an msprof
op_summary CSV) or ``gemm`` (one GEMM). A file is named by a path relative to
the spec; the canonical form keeps what was read from it (the config keys the
reader uses, the shape rows, the merged profile), never the path alone, so a
stored study can be rebuilt without the file, and a file that changed in
anything the workload reads makes a different study. The same keys with an
inline value instead of a path are how a stored study is read back.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from aoe_optuna.aicore.layer_models import layer_charge
from aoe_optuna.hardware.profile import DTYPE_BYTES, SocProfile
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.spec.format import Section, SpecError, describe
from aoe_optuna.workload import hf_config, msprof, shape_list
from aoe_optuna.workload.architecture import Architecture
from aoe_optuna.workload.buckets import serving_workload
from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.gemm import MAX_DIM, Gemm, Workload, single_gemm
from aoe_optuna.workload.models import MODELS, builtin_architecture

SOURCES = ("gemm", "model", "hf_config", "shapes", "msprof")
MODEL_KEYS = ("phase", "batch", "seq_len", "tp", "dtype", "weights", "vector_kernels",
              "attention")
# How a model's vector kernels (norms, SwiGLU, rope) are charged: at the roofline
# (the default; studies made before the key keep their figures), or with the
# library's kernels as the simulator models them or the project's own kernel at each
# call's best tiling (docs/VECTOR_KERNELS.md); "tuned": charged as "default", and
# `aoe-tune operators` tunes each kernel as an operator of its own (docs/OPERATORS.md).
VECTOR_CHARGES = ("roofline", "default", "best", "tuned")
# Attention likewise: at the roofline, or with the simulator's decode (GQA/MQA, MLA)
# or causal prefill attention model at CANN's default tiling (for MLA, CANN's fused
# attention kernel itself) or at its best tiling (for MLA, catlass's template's best;
# docs/ATTENTION.md), or "tuned" as the vector kernels.
ATTENTION_CHARGES = ("roofline", "default", "best", "tuned")
DEFAULT_MODEL = {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024,
                 "tp": 1, "dtype": "fp16"}
MAX_BUCKETS = 64
MAX_TOKENS = 1 << 30


def parse_workload(section: Section, profile: SocProfile) -> tuple[Workload, dict[str, Any]]:
    """(workload, canonical section) of the spec's ``workload`` section."""
    given = [s for s in SOURCES if s in section.data]
    if len(given) > 1:
        raise section.error(given[1], f"one source of GEMMs, not both {given[0]} and "
                            f"{given[1]}", section.data[given[1]])
    source = given[0] if given else "model"
    if source == "gemm":
        return _gemm(section)
    if source == "shapes":
        return _shapes(section)
    if source == "msprof":
        return _msprof(section)
    return _model(section, profile, source)


# ----------------------------------------------------------------- one GEMM
def _gemm(section: Section) -> tuple[Workload, dict[str, Any]]:
    section.check_keys(("gemm",))
    g = section.section("gemm")
    g.check_keys(("M", "K", "N", "dtype", "batch"))
    for dim in ("M", "K", "N"):
        if dim not in g.data:
            raise g.error(dim, f"an integer from 1 to {MAX_DIM:,}", raw="nothing")
    dims = {d: g.integer(d, 0, 1, MAX_DIM) for d in ("M", "K", "N")}
    dtype = g.string("dtype", "fp16", list(DTYPE_BYTES))
    batch = g.integer("batch", 1, 1, MAX_DIM)  # matrices of one batched launch
    gemm = Gemm(dims["M"], dims["K"], dims["N"], dtype, batch=batch)
    doc: dict[str, Any] = {**dims, "dtype": dtype}
    if batch > 1:  # a single GEMM's stored spec stays as it always was
        doc["batch"] = batch
    return single_gemm(gemm), {"gemm": doc}


# ----------------------------------------------------------------- a model
def _model(section: Section, profile: SocProfile,
           source: str) -> tuple[Workload, dict[str, Any]]:
    """The built-in table's model or a Hugging Face config, over the serving buckets."""
    if source == "model":
        section.check_keys(("model",) + MODEL_KEYS)
        name = section.string("model", DEFAULT_MODEL["model"])
        if name not in MODELS:  # the built-in table is one model; a config.json is any
            raise section.error("model", f"one of {list(MODELS)}, or \"hf_config\": the path "
                                "of the model's Hugging Face config.json in place of \"model\" "
                                "(docs/WORKLOADS.md; studies/models/ holds several)",
                                raw=repr(name))
        arch = builtin_architecture(name)
        doc: dict[str, Any] = {"model": name}
    else:
        section.check_keys(("hf_config", "name") + MODEL_KEYS)
        arch, used = _hf_config(section)
        doc = {"hf_config": used, "name": arch.name}
    phase = section.string("phase", "decode", ["decode", "prefill"])
    batches = _int_list(section, "batch", 1, 65536)
    seq_lens = _int_list(section, "seq_len", 1024, 1 << 20)
    doc.update(phase=phase, batch=_one_or_list(batches), seq_len=_one_or_list(seq_lens),
               tp=section.integer("tp", 1, 1, 64),
               dtype=section.string("dtype", "fp16", list(DTYPE_BYTES)))
    if phase == "prefill" and max(batches) * max(seq_lens) > MAX_DIM:
        raise section.error("seq_len", f"batch x seq_len at most {MAX_DIM:,}",
                            max(seq_lens))
    n_buckets = len(batches) * len(seq_lens)
    if n_buckets > MAX_BUCKETS:
        raise section.error("batch", f"at most {MAX_BUCKETS} (batch, seq_len) buckets",
                            raw=f"{n_buckets} buckets")
    weights = _weights(section, n_buckets)
    if weights is not None and n_buckets > 1:
        doc["weights"] = weights
    charge = section.string("vector_kernels", "roofline", list(VECTOR_CHARGES))
    if charge != "roofline":  # absent from the canonical form: older studies stay the same
        doc["vector_kernels"] = charge
    attention = section.string("attention", "roofline", list(ATTENTION_CHARGES))
    if attention != "roofline":
        doc["attention"] = attention
    tuned = [part for part, value in (("attention", attention), ("vector", charge))
             if value == "tuned"]
    try:
        workload = serving_workload(
            profile, arch, phase, batches, seq_lens, doc["tp"], doc["dtype"],
            doc.get("weights"), part_charge(profile, charge), part_charge(profile, attention),
            tuned)
    except ValueError as exc:
        key, _, detail = str(exc).partition(": ")
        raise section.error(key if key in doc else None, "a workload the model allows",
                            raw=detail or str(exc)) from None
    return workload, doc


def part_charge(profile: SocProfile, charge: str) -> Callable[[LayerProblem], float] | None:
    """Seconds of one call of a step part's problem (attention, a vector kernel) under
    ``charge``, by the simulator's model of whichever problem it is; None for the
    roofline. A tuned kernel is charged at its default tiling until an operator run
    times it."""
    if charge == "roofline":
        return None
    return layer_charge(profile, "default" if charge == "tuned" else charge)


def _hf_config(section: Section) -> tuple[Architecture, dict[str, Any]]:
    value = section.data["hf_config"]
    name = section.string("name") if "name" in section.data else None
    try:
        if isinstance(value, str):
            path = _path(section, "hf_config")
            arch, used = hf_config.read_hf_config(path, name)
            return arch, used
        where = f"{section.source}: {section.path('hf_config')}"
        used = hf_config.used_keys(value, where)
        return hf_config.architecture_from_hf(used, name or "model", where), used
    except WorkloadFileError as exc:
        raise _file_error(section, "hf_config", hf_config.WHAT, exc) from None


# ----------------------------------------------------------------- a shape list
def _shapes(section: Section) -> tuple[Workload, dict[str, Any]]:
    section.check_keys(("shapes", "name", "dtype", "tokens_per_step", "fixed_s"))
    value = section.data["shapes"]
    dtype = section.string("dtype", "fp16", list(DTYPE_BYTES))
    try:
        if isinstance(value, str):
            path = _path(section, "shapes")
            shapes = shape_list.read_shape_list(path, dtype)
            default_name = path.stem
        else:
            shapes = shape_list.shapes_from_json(value, f"{section.source}: "
                                                 f"{section.path('shapes')}", dtype)
            default_name = "shapes"
    except WorkloadFileError as exc:
        raise _file_error(section, "shapes", shape_list.WHAT, exc) from None
    name = section.string("name", default_name)
    tokens = section.integer("tokens_per_step", shapes.tokens_per_step or 1, 1, MAX_TOKENS)
    fixed = section.number("fixed_s", shapes.fixed_s or 0.0)
    workload = shape_list.shape_list_workload(shapes, name, tokens, fixed)
    doc = {"shapes": shapes.rows(), "name": name, "tokens_per_step": tokens,
           "fixed_s": workload.fixed_s}
    return workload, doc


# ----------------------------------------------------------------- an msprof profile
def _msprof(section: Section) -> tuple[Workload, dict[str, Any]]:
    section.check_keys(("msprof", "name", "tokens_per_step", "steps", "device", "max_shapes"))
    value = section.data["msprof"]
    try:
        if isinstance(value, str):
            path = _path(section, "msprof")
            steps = section.integer("steps", 1, 1, 1 << 20)
            device = section.integer("device", 0, 0, 1 << 16) if "device" in section.data \
                else None
            max_shapes = section.integer("max_shapes", msprof.MAX_SHAPES, 1, 1 << 24)
            step = msprof.read_op_summary(path, steps, device, max_shapes)
            default_name = path.stem
        else:
            for key in ("steps", "device", "max_shapes"):
                if key in section.data:
                    raise section.error(key, f"no {key}: it applies to a profile file, and "
                                        "this profile is inline", section.data[key])
            step = msprof.step_from_document(value, f"{section.source}: "
                                             f"{section.path('msprof')}")
            default_name = "profile"
    except WorkloadFileError as exc:
        raise _file_error(section, "msprof", msprof.WHAT, exc) from None
    name = section.string("name", default_name)
    tokens = section.integer("tokens_per_step", 1, 1, MAX_TOKENS)
    doc = {"msprof": step.document(), "name": name, "tokens_per_step": tokens}
    return msprof.profiled_workload(step, name, tokens), doc


# ----------------------------------------------------------------- helpers
def _path(section: Section, key: str) -> Path:
    """A file named by ``key``, relative to the spec file."""
    text = section.string(key)
    path = Path(text)
    if not path.is_absolute() and not section.source.startswith("<"):
        path = Path(section.source).parent / path
    if not path.is_file():
        raise section.error(key, "an existing file (a path relative to the spec)",
                            raw=f"{text!r} (not found)")
    return path


def _file_error(section: Section, key: str, what: str, exc: WorkloadFileError) -> SpecError:
    """One line naming the spec's key, the file, the place in it and what was expected."""
    place = exc.source if exc.where in ("file", "document") else f"{exc.where} of {exc.source}"
    return SpecError(section.source, section.path(key), f"{place} to be {exc.expected} "
                     f"({what})", exc.got)


def _int_list(section: Section, key: str, default: int, high: int) -> list[int]:
    """An integer, or a list of distinct integers (one serving bucket each)."""
    value = section.data.get(key, default)
    items = value if isinstance(value, list) else [value]
    expected = f"an integer from 1 to {high:,} or a list of distinct ones"
    if not items:
        raise section.error(key, expected, value)
    out = []
    for item in items:
        if isinstance(item, float) and item.is_integer():
            item = int(item)
        if isinstance(item, bool) or not isinstance(item, int) or not 1 <= item <= high:
            raise section.error(key, expected, value)
        out.append(item)
    if len(set(out)) != len(out):
        raise section.error(key, expected, raw=f"{describe(value)} (a value twice)")
    return out


def _one_or_list(values: list[int]) -> int | list[int]:
    return values[0] if len(values) == 1 else values


def _weights(section: Section, n_buckets: int) -> list[int] | None:
    if "weights" not in section.data:
        return None
    value = section.data["weights"]
    expected = (f"a list of {n_buckets} whole numbers of steps (at least 1), one per "
                "(batch, seq_len) bucket, batch-major")
    if not isinstance(value, list) or len(value) != n_buckets or any(
            isinstance(w, bool) or not isinstance(w, int) or w < 1 for w in value):
        raise section.error("weights", expected, value)
    return list(value)


def study_name_part(doc: dict[str, Any], workload: Workload) -> tuple[str, str]:
    """(what, dtype) of a study's default name: ``qwen2.5-7b-decode-b1``, ``mine-shapes``..."""
    if "gemm" in doc:
        g = doc["gemm"]
        return f"gemm{g['M']}x{g['K']}x{g['N']}", g["dtype"]
    if "shapes" in doc:
        return f"{doc['name']}-shapes", workload.dtype
    if "msprof" in doc:
        return f"{doc['name']}-profiled", workload.dtype
    what = f"{doc.get('model') or doc['name']}-{doc['phase']}-b{_spell(doc['batch'])}"
    if doc["phase"] == "prefill" or isinstance(doc["seq_len"], list):
        what += f"-s{_spell(doc['seq_len'])}"
    if doc["tp"] > 1:
        what += f"-tp{doc['tp']}"
    if "attention" in doc:  # another step time: not the roofline-charged study
        what += f"-attn{doc['attention']}"
    if "vector_kernels" in doc:
        what += f"-vk{doc['vector_kernels']}"
    return what, doc["dtype"]


def _spell(value: int | list[int]) -> str:
    return "_".join(map(str, value)) if isinstance(value, list) else str(value)
