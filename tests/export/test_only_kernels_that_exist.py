"""Only kernels that exist: a feasible config of every shipped spec renders and exports.

For every spec in studies/ and every operator kind, a few hundred feasible configs
drawn at random (seeded) are rendered as the npu backend builds them and exported as
the study's printed export writes them, into a temporary folder: none is refused.
Where a kind's kernel cannot run a problem whatever the tiling (MLA decode, a sliding
window), the refusal is the product's: the same one line for every config, said up
front by the kind's ``no_kernel``. The other way round, what the kernel rules forbid
is what the renderers refuse: the rules forbid nothing more.
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aoe_optuna.backends.npu.catlass.args import CatlassArgError, catlass_args
from aoe_optuna.backends.npu.catlass.build import compile_option_reason, render_catlass_project
from aoe_optuna.backends.npu.simple_gemm.render import render_project, tuned_kernel
from aoe_optuna.cli.main import main
from aoe_optuna.export.catlass_header import write_catlass_header
from aoe_optuna.export.kb_entry import make_entry
from aoe_optuna.export.kernel_source import ExportError
from aoe_optuna.export.npu_kernel import write_npu_kernel
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.operators.layer_ops import LayerOperator, layer_operators
from aoe_optuna.operators.outcome import write_layer_kernel
from aoe_optuna.space.kernel_rule import KernelRule
from aoe_optuna.space.params import default_config
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.format import read_document
from aoe_optuna.spec.loader import StudySpec, load_spec, spec_from_dict

ROOT = Path(__file__).resolve().parents[2]
SPECS = sorted([*ROOT.glob("studies/*.json"), *ROOT.glob("studies/*.toml")])
MODELS = sorted((ROOT / "studies" / "models").glob("*.json"))
DRAWS = 300  # feasible configs per spec, and per attention or vector problem
SPACES = ROOT.parent / "shared" / "spaces"


def _draw(space: SearchSpace, n: int, seed: int) -> list[dict[str, Any]]:
    return space.configs(space.sample_feasible(n, np.random.default_rng(seed)))


def export_gemm(spec: StudySpec, config: dict[str, Any], folder: Path) -> None:
    """What the study's printed export writes for ``config``, and the build tree the npu
    backend renders for it; ValueError (ExportError, RenderError, ...) where refused."""
    full = {**default_config(), **spec.space.full_config(config)}
    dtype = spec.workload.dtype
    kind = spec.export.kind
    if kind == "kernel":
        write_npu_kernel(folder / "optimized_kernel.cpp", full, spec.profile, dtype)
        render_project(full, dtype, spec.profile, "npu")
    elif kind == "catlass":
        args = write_catlass_header(folder / "aoe_catlass_gemm.h", full, spec.profile, dtype)
        why = compile_option_reason(full)
        if why is not None:
            raise ValueError(why)
        render_catlass_project(args, full, spec.profile, "npu")
    else:
        assert kind == "kb", kind
        for g in spec.workload.gemms:
            make_entry(spec.profile.soc, spec.op_name, g.dtype, g.M, g.K, g.N,
                       str(full.get("layout", "row_major")), config, 1.0, None, "s",
                       "sqlite:///aoe.db")


def _gemm_case(path: Path) -> Any:
    """A spec of the simple kernel renders its 20 kB source twice per config (about 30 ms):
    those run in the slow tier; the catlass, CPU and recorded specs in the fast one."""
    fast = "catlass" in path.name or "cpu" in path.name or "replay" in path.name
    return pytest.param(path, id=path.name, marks=() if fast else pytest.mark.slow)


@pytest.mark.parametrize("path", [_gemm_case(p) for p in SPECS])
def test_feasible_gemm_configs_of_every_shipped_spec_render_and_export(
        path: Path, tmp_path: Path) -> None:
    if "replay" in path.name and not SPACES.is_dir():
        pytest.skip("../shared/spaces absent: the recorded space cannot be read")
    spec = load_spec(path)
    if spec.export.kind == "none":  # a recorded Kernel Tuner space: no kernel, no entries
        assert spec.backend_space and spec.export.why_no_kernel
        return
    configs = _draw(spec.space, DRAWS, seed=len(path.name))
    assert len(configs) == min(DRAWS, spec.space.n_feasible)
    refused = []
    for config in configs:
        try:
            export_gemm(spec, config, tmp_path)
        except ValueError as exc:
            refused.append((config, str(exc)))
    assert refused == []


def _tuned_documents() -> list[tuple[str, dict[str, Any]]]:
    """(source, document) of every shipped spec with a model workload, its attention and
    vector kernels tuned; and each shipped model config, decode and prefill."""
    out = []
    for path in SPECS:
        doc = read_document(path)
        workload = doc.get("workload", {})
        backend = doc.get("backend", {}).get("name", "simulator")
        if backend == "simulator" and not {"gemm", "shapes", "msprof"} & set(workload):
            tuned = copy.deepcopy(doc)
            tuned["workload"] = {**workload, "attention": "tuned", "vector_kernels": "tuned"}
            out.append((str(path), tuned))
    base = read_document(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
    for model in MODELS:
        for phase in ("decode", "prefill"):
            doc = copy.deepcopy(base)
            doc["workload"] = {"hf_config": str(model), "phase": phase, "batch": 1,
                               "seq_len": 1024, "attention": "tuned", "vector_kernels": "tuned"}
            doc.pop("baseline", None)
            out.append((f"{model.name} {phase}", doc))
    return out


def _layer_operators() -> list[tuple[LayerOperator, StudySpec]]:
    """Each distinct attention and vector problem of :func:`_tuned_documents`."""
    seen: dict[tuple, tuple[LayerOperator, StudySpec]] = {}
    for source, doc in _tuned_documents():
        spec = spec_from_dict(doc, source=source if source.endswith((".json", ".toml"))
                              else str(ROOT / "studies" / "x.json"))
        for op in layer_operators(spec.workload):
            seen.setdefault((op.key, spec.profile.soc), (op, spec))
    return list(seen.values())


def test_every_kind_of_the_shipped_workloads_is_covered() -> None:
    kinds = {op.operator_kind.name for op, _ in _layer_operators()}
    assert kinds == {"decode_attention", "mla_decode_attention", "prefill_attention", "vector",
                     "moe_gating"}


def _check_renders(ops: list[tuple[LayerOperator, StudySpec]], folder: Path,
                   draws: int = DRAWS) -> dict[str, int]:
    """Render up to ``draws`` feasible tilings of each problem; count problems per outcome."""
    checked = {"rendered": 0, "no kernel": 0}
    for op, spec in ops:
        kind, profile = op.operator_kind, spec.profile
        why = kind.no_kernel(op.problem, op.dtype, profile)
        path = folder / f"kernel{kind.kernel_suffix}"
        for config in _draw(op.space(profile), draws, seed=7):
            if why is None:
                write_layer_kernel(path, op, config, profile)  # ExportError fails the test
                continue
            with pytest.raises(ExportError) as refused:  # the product's one line, every time
                write_layer_kernel(path, op, config, profile)
            assert str(refused.value) == why and "\n" not in why
        checked["rendered" if why is None else "no kernel"] += 1
    return checked


def test_feasible_tilings_of_one_problem_of_each_kind_render(tmp_path: Path) -> None:
    first: dict[str, tuple[LayerOperator, StudySpec]] = {}
    for op, spec in _layer_operators():
        first.setdefault(op.op_name, (op, spec))  # each attention kind, vector kernel, gate
    assert set(first) == {"decode_attention", "mla_decode_attention", "prefill_attention",
                          "rmsnorm", "add_rmsnorm", "swiglu", "rope", "moe_gating"}
    assert _check_renders(list(first.values()), tmp_path) == {"rendered": 8, "no kernel": 0}


@pytest.mark.slow  # about 15 s: a vector kernel renders in 15 ms
def test_feasible_tilings_of_every_attention_and_vector_problem_render(tmp_path: Path) -> None:
    """Every problem's shape, fewer draws each: the kind's rules are drawn DRAWS times
    above; here each shape meets them (a vector tile against its row length, a head
    count against the cores)."""
    checked = _check_renders(_layer_operators(), tmp_path, draws=DRAWS // 5)
    assert checked["rendered"] >= 50 and checked["no kernel"] >= 2, checked


# ------------------------------------------------------------ the rules forbid no more
CATLASS_EVERYTHING = {
    "tile_m": [16, 32, 48, 128], "tile_n": [16, 32, 256], "tile_k": [16, 32, 128],
    "l1_k": [0, 64, 256], "preload": [0, 1], "unit_flag": [0, 1], "split_k": [1, 2],
    "padding": [0, 1], "quantization": [False, True], "layout_a": ["row_major", "zN"],
    "layout_b": ["col_major", "zN"], "pipeline": [1, 2], "l1_prefetch": [0, 1],
    "output_align": [0, 1], "unroll_factor": [0, 4],
}
SIMPLE_EVERYTHING = {
    "tile_m": [16, 32, 64], "tile_k": [16, 32], "tile_n": [16, 64], "pipeline": [0, 1, 2],
    "l1_prefetch": [0, 1], "output_align": [0, 1], "quantization": [False, True],
    "layout": ["row_major", "col_major", "z_major"], "unroll_factor": [0, 8, 64, 128],
}


def _chip_only(spec: StudySpec) -> SearchSpace:
    """The spec's space with the chip's rules and none of its kernel's."""
    rules = [r for r in spec.space.rules if not isinstance(r, KernelRule)]
    assert len(rules) == len(hardware_rules(spec.profile, spec.workload.dtype))
    return SearchSpace(spec.space.params, rules)


def _catlass_refuses(spec: StudySpec, config: dict[str, Any]) -> str | None:
    full = {**default_config(), **spec.space.full_config(config)}
    try:
        catlass_args(full, spec.profile, spec.workload.dtype)
    except CatlassArgError as exc:
        return str(exc)
    return compile_option_reason(full)


def _simple_refuses(spec: StudySpec, config: dict[str, Any]) -> str | None:
    full = {**default_config(), **spec.space.full_config(config)}
    try:
        tuned_kernel(full, spec.profile, spec.workload.dtype)
    except ValueError as exc:
        return str(exc)
    return None


@pytest.mark.parametrize("space,dtype,refuses,kind", [
    (CATLASS_EVERYTHING, "fp16", _catlass_refuses, "catlass"),
    (CATLASS_EVERYTHING, "bf16", _catlass_refuses, "catlass"),
    (SIMPLE_EVERYTHING, "fp16", _simple_refuses, "kernel"),
], ids=["catlass-fp16", "catlass-bf16", "simple-fp16"])
def test_the_kernel_rules_forbid_exactly_what_the_kernel_refuses(
        space: dict, dtype: str, refuses: Any, kind: str) -> None:
    spec = spec_from_dict({"search_space": space, "baseline": None,
                           "workload": {"gemm": {"M": 64, "K": 4096, "N": 4096,
                                                 "dtype": dtype}}})
    assert spec.export.kind == kind
    allowed = _draw(spec.space, 100, seed=1)
    chip = _chip_only(spec)
    rows = chip.sample_feasible(600, np.random.default_rng(2))
    forbidden = chip.configs(rows[~spec.space.is_feasible(rows)])
    assert len(allowed) == 100 and len(forbidden) > 300  # both sides are exercised
    assert [c for c in allowed if refuses(spec, c) is not None] == []
    assert [c for c in forbidden if refuses(spec, c) is None] == []
    # every kernel rule a config the chip allows can break is met in the draws
    broken = {line.split(":")[0] for c in forbidden for line in spec.space.explain(c)}
    rules = {r.name for r in spec.space.rules if isinstance(r, KernelRule)}
    implied = {"catlass_l1_k", "kernel_tiles"}  # the chip's alignment rules imply these
    assert broken == rules - implied, (broken, rules)


def test_a_forbidden_config_says_which_kernel_lacks_it() -> None:
    spec = load_spec(ROOT / "studies" / "qwen25_7b_decode_catlass_910b2.json")
    config = {**spec.baseline, "preload": 1, "split_k": 8}
    assert spec.space.explain(config) == [
        "catlass_preload: padding=0, preload=1, split_k=8: catlass's split-K and padding "
        "kernels call a pingpong block MMAD; only BasicMatmulPreload preloads "
        "[include/catlass/gemm/kernel/splitk_matmul.hpp, "
        "include/catlass/gemm/kernel/padding_matmul.hpp]"]
    assert spec.space.explain({**config, "preload": 0}) == []


@pytest.mark.parametrize("doc,kind,why", [
    ({"backend": {"name": "cpu"}}, "kb", "another device"),
    ({"workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
      "search_space": {"tile_m": [16, 32], "tile_k": [16], "tile_n": [16]}},
     "kb", "the npu backend's kernel: dtype fp32"),
    ({"workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
      "search_space": {"tile_m": [16, 32], "tile_k": [16], "tile_n": [16], "split_k": [1, 2],
                       "preload": [0, 1]}},
     "kb", "catlass header: dtype fp32"),
], ids=["cpu", "simple-fp32", "catlass-fp32"])
def test_a_study_with_no_kernel_exports_kb_entries_and_says_why(doc: dict, kind: str,
                                                                  why: str) -> None:
    spec = spec_from_dict({**doc, "baseline": None})
    assert spec.export.kind == kind and why in str(spec.export.why_no_kernel)
    # no kernel, no kernel rules: the space is the chip's (or the CPU kernel's) alone
    assert not any(isinstance(r, KernelRule) for r in spec.space.rules)


@pytest.mark.parametrize("space,rule", [
    ({"layout": ["col_major"]}, "kernel_layout: layout=col_major"),
    ({"l1_k": [256], "preload": [1], "split_k": [2, 4]}, "catlass_preload: padding=0"),
], ids=["simple", "catlass"])
def test_a_space_of_configs_the_kernel_lacks_is_refused_in_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], space: dict, rule: str) -> None:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps({"search_space": {"tile_m": [64], "tile_k": [64],
                                                 "tile_n": [64], **space}, "baseline": None}))
    db = tmp_path / "aoe.db"
    assert main(["--config", str(path), "--storage", f"sqlite:///{db}", "--n-trials", "1"]) == 2
    (line,) = capsys.readouterr().err.splitlines()
    assert f"{path}: key 'search_space': expected a space with a config its kernel has, got " \
           "none of the " in line and rule in line
    assert not db.exists()
