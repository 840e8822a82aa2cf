"""Study specs: the shipped studies, defaults, canonical form, the backend-space branch,
and a corpus of bad specs that must each fail with one line naming the key."""

from __future__ import annotations

import itertools
import json
import sys
import types
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from aoe_optuna.backends.base import BackendBase, Measurement
from aoe_optuna.backends.registry import BACKENDS
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.spec.backend import make_backend
from aoe_optuna.spec.loader import SpecError, load_spec, spec_from_dict
from aoe_optuna.workload.gemm import MAX_DIM

STUDIES = Path(__file__).resolve().parents[2] / "studies"
TILES = list(range(16, 257, 16))


def brute_force_feasible_tilings(soc: str, dtype_bytes: int) -> int:
    """The seed space's feasible count, straight from the capacity rules of the reference."""
    p = load_profile(soc)
    count = 0
    for m, k, n, pipe, pre in itertools.product(TILES, TILES, TILES, (0, 1, 2), (0, 1)):
        db = 2 if pipe == 2 else 1
        ok = (
            m * k * dtype_bytes * db <= p.l0a_bytes
            and k * n * dtype_bytes * db <= p.l0b_bytes
            and m * n * 4 <= p.l0c_bytes
            and (m + n) * k * p.l1_k_steps * dtype_bytes * (2 if pre else 1) <= p.l1_bytes
            and k % p.c0["fp16"] == 0
        )
        count += ok
    return count * 2  # output_align is read by no rule


# ------------------------------------------------------------------ shipped studies
def test_aoe_config_is_accepted_verbatim() -> None:
    text = (STUDIES / "aoe_config.json").read_text()
    assert "// tokens/s" in text  # the comments are still in the file
    spec = load_spec(STUDIES / "aoe_config.json")
    assert spec.op_name == "GemmKernel"
    assert spec.objective == "throughput"
    assert spec.max_search_time == 600.0
    assert spec.target_throughput == 100.0
    assert spec.space.names == ("tile_m", "tile_k", "tile_n", "pipeline", "l1_prefetch",
                                "output_align")
    assert spec.space.size == 5 * 5 * 5 * 3 * 2 * 2
    assert spec.profile.soc == "Ascend910B2"
    assert spec.backend == {"name": "simulator"}
    assert spec.accuracy == {"max_relative_error": 0.01}
    # Defaults of params.KNOWN_PARAMS are all in this space and feasible.
    assert spec.baseline == {"tile_m": 128, "tile_k": 64, "tile_n": 256, "pipeline": 2,
                             "l1_prefetch": 1, "output_align": 1}
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1"


def test_seed_study_size_and_feasible_count() -> None:
    spec = load_spec(STUDIES / "qwen25_7b_decode_910b2.json")
    assert spec.space.size == 49_152
    assert spec.space.n_feasible == brute_force_feasible_tilings("Ascend910B2", 2)
    assert spec.space.n_feasible == spec.space.all_feasible().shape[0]
    assert spec.baseline is not None
    assert spec.space.explain(spec.baseline) == []
    assert spec.baseline["pipeline"] == 2  # "double_buffer" spelled canonically
    assert spec.workload.tokens_per_step == 1
    assert spec.backend == {"name": "simulator", "noise": 0.01, "seed": 0}


def test_compile_study_size_and_feasible_count() -> None:
    spec = load_spec(STUDIES / "qwen25_7b_decode_910b2_compile.json")
    seed = load_spec(STUDIES / "qwen25_7b_decode_910b2.json")
    assert spec.space.size == 11_796_480
    # the simple kernel it exports to has no col_major path: 2 of the 3 layouts remain
    assert spec.space.n_feasible == seed.space.n_feasible * 4 * 4 * 5 * 2
    assert spec.space.n_feasible == brute_force_feasible_tilings("Ascend910B2", 2) * 160
    assert spec.space.explain({**spec.baseline, "layout": "col_major"}) == [
        "kernel_layout: layout=col_major: the Ascend C kernel implements ['row_major', "
        "'z_major'] operands only [templates/gemm_kernel.cpp]"]
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-qwen2.5-7b-decode-b1-compile"
    assert spec.baseline is not None and spec.baseline["layout"] == "row_major"


def test_toml_gemm_study() -> None:
    spec = load_spec(STUDIES / "gemm_4096_910b2.toml")
    gemm = spec.workload.gemms
    assert len(gemm) == 1 and gemm[0].key == (4096, 4096, 4096, "fp16")
    assert spec.space.size == 49_152
    # The user rule tile_m >= 64 and tile_n >= 64, on top of the hardware rules.
    rows = spec.space.all_feasible()
    configs = spec.space.configs(rows)
    assert all(c["tile_m"] >= 64 and c["tile_n"] >= 64 for c in configs)
    wide = [c for c in load_spec(STUDIES / "qwen25_7b_decode_910b2.json").space.configs(
        load_spec(STUDIES / "qwen25_7b_decode_910b2.json").space.all_feasible())
        if c["tile_m"] >= 64 and c["tile_n"] >= 64]
    assert len(configs) == len(wide)
    assert spec.default_study_name() == "GemmKernel-Ascend910B2-gemm4096x4096x4096"


def test_toml_and_json_of_the_same_study_are_the_same_study(tmp_path: Path) -> None:
    toml_spec = load_spec(STUDIES / "gemm_4096_910b2.toml")
    path = tmp_path / "same.json"
    path.write_text(json.dumps(toml_spec.document))
    assert load_spec(path).canonical() == toml_spec.canonical()


@pytest.mark.parametrize("name", ["gemm_4096_910b2.toml", "qwen25_7b_decode_910b2.json"])
def test_a_byte_order_mark_is_read_past(tmp_path: Path, name: str) -> None:
    """Editors on Windows save UTF-8 with a BOM; JSON read past it, TOML refused it with
    "Invalid statement (at line 1, column 1)", saying nothing of the mark."""
    path = tmp_path / name
    path.write_bytes(b"\xef\xbb\xbf" + (STUDIES / name).read_bytes())
    assert load_spec(path).canonical() == load_spec(STUDIES / name).canonical()


SHIPPED = ["aoe_config.json", "qwen25_7b_decode_910b2.json",
           "qwen25_7b_decode_910b2_compile.json", "gemm_4096_910b2.toml",
           "qwen25_7b_decode_catlass_910b2.json", "qwen25_7b_prefill_catlass_910b2.json",
           "gemm_4096_catlass_910b2.toml", "cpu_gemm.json", "cpu_gemm_kernel_set.json"]


@pytest.mark.parametrize("name", SHIPPED)
def test_canonical_round_trips_through_storage(name: str) -> None:
    spec = load_spec(STUDIES / name)
    canon = spec.canonical()
    stored = json.loads(json.dumps(canon))  # what a study's user attrs give back
    again = spec_from_dict(stored)
    assert again.canonical() == canon
    # a backend's own rules (the cpu backend's tiles) come back once, not twice
    assert len(again.space.rules) == len(spec.space.rules)
    assert again.space.size == spec.space.size
    assert again.space.n_feasible == spec.space.n_feasible
    assert again.baseline == spec.baseline
    assert again.default_study_name() == spec.default_study_name()


def test_catlass_studies_count_their_feasible_tilings_by_the_rules() -> None:
    """The catlass space: L1 (m + n) x l1_k x 2 B x 2 stages, L0A/L0B halves, L0C, l1_k % k."""
    spec = load_spec(STUDIES / "gemm_4096_catlass_910b2.toml")
    p = load_profile("Ascend910B2")
    tiles = 0
    for m, n, k, l1k in itertools.product(range(16, 257, 16), range(16, 513, 16),
                                          (16, 32, 64, 128, 256), (64, 128, 256, 512, 1024)):
        tiles += (m * k * 2 * 2 <= p.l0a_bytes and k * n * 2 * 2 <= p.l0b_bytes
                  and m * n * 4 <= p.l0c_bytes and (m + n) * l1k * 2 * 2 <= p.l1_bytes
                  and l1k % k == 0)
    # swizzle offset, direction, unit flag; preload x split-K in (1, 2, 4) without the
    # two pairs catlass has no kernel for (Preload with split-K: catlass_preload)
    free = 5 * 2 * 2 * (2 * 3 - 2)
    assert spec.space.n_feasible == tiles * free
    assert spec.baseline is not None and spec.baseline["l1_k"] == 256


def test_layout_and_operand_layouts_are_not_tuned_together() -> None:
    with pytest.raises(SpecError) as err:
        spec_from_dict({"search_space": {"layout": ["row_major", "z_major"],
                                         "layout_b": ["col_major", "zN"]}})
    assert "search_space.layout_b" in str(err.value)
    assert "either layout (both operands) or layout_a/layout_b" in str(err.value)


# ------------------------------------------------------------------ defaults and forms
def test_empty_spec_gets_every_default() -> None:
    spec = spec_from_dict({})
    assert spec.op_name == "GemmKernel"
    assert spec.space.size == 49_152
    assert spec.max_search_time is None and spec.target_throughput is None
    assert spec.profile.soc == "Ascend910B2"
    assert spec.workload.name == "qwen2.5-7b decode batch=1 seq_len=1024 tp=1 fp16"
    assert spec.backend == {"name": "simulator"}
    assert spec.accuracy == {"max_relative_error": 0.01}
    assert spec.baseline is not None and spec.baseline["tile_n"] == 256
    canon = spec.canonical()
    assert canon["workload"] == {"model": "qwen2.5-7b", "phase": "decode", "batch": 1,
                                 "seq_len": 1024, "tp": 1, "dtype": "fp16"}
    assert canon["baseline"] == spec.baseline


def test_range_and_list_spell_the_same_space() -> None:
    a = spec_from_dict({"search_space": {"tile_m": {"low": 16, "high": 64, "step": 16},
                                         "pipeline": ["none", "double_buffer"]}})
    b = spec_from_dict({"search_space": {"tile_m": [16, 32, 48, 64], "pipeline": [0, 2]}})
    assert a.canonical() == b.canonical()
    assert a.space.params[0].choices == (16, 32, 48, 64)
    assert a.space.params[1].choices == (0, 2)


def test_range_step_defaults_to_one() -> None:
    spec = spec_from_dict({"search_space": {"unroll_factor": {"low": 0, "high": 4}}})
    assert spec.space.params[0].choices == (0, 1, 2, 3, 4)


def test_baseline_defaults_missing_params_and_null_means_none() -> None:
    space = {"tile_m": [64, 128], "tile_n": [128, 256], "opt_level": ["O1", "O2", "O3"]}
    spec = spec_from_dict({"search_space": space, "baseline": {"tile_m": 64}})
    assert spec.baseline == {"tile_m": 64, "tile_n": 256, "opt_level": "O2"}
    assert spec_from_dict({"search_space": space, "baseline": None}).baseline is None
    # The default is not in the space: no baseline rather than a wrong one.
    assert spec_from_dict({"search_space": {"tile_m": [16, 32]}}).baseline is None


def test_constraints_name_params_hardware_figures_categories_and_fixed_params() -> None:
    doc = {
        "search_space": {"tile_m": [16, 32, 64, 128], "tile_k": [16, 64],
                         "layout": ["row_major", "z_major"]},
        "constraints": [
            "tile_m * tile_k * 2 <= l0a_size / 4",
            {"name": "z_needs_wide_m", "expression": "layout != 'z_major' or tile_m >= 64"},
            "quantization == 0 and pipeline == 'double_buffer'",  # untuned: fixed defaults
        ],
    }
    spec = spec_from_dict(doc)
    rows = spec.space.all_feasible()
    got = {tuple(c.values()) for c in spec.space.configs(rows)}
    want = {
        (m, k, lay)
        for m, k, lay in itertools.product([16, 32, 64, 128], [16, 64], ["row_major", "z_major"])
        if m * k * 2 <= 65536 / 4 and (lay != "z_major" or m >= 64)
        and m * k * 2 * 2 <= 65536  # hardware L0A with the default double buffer
    }
    assert got == want
    names = [r.name for r in spec.space.rules]
    assert "z_needs_wide_m" in names and "L0A" in names
    assert spec.canonical()["constraints"][1] == {
        "name": "z_needs_wide_m", "expression": "layout != 'z_major' or tile_m >= 64"}


def test_user_profile_by_path_is_embedded_in_the_canonical_form(tmp_path: Path) -> None:
    data = json.loads((Path(load_profile("Ascend910B2").path)).read_text())
    data["soc"] = "MyAscend"
    data["figures"]["l0a_bytes"]["value"] = 32768
    (tmp_path / "mine.json").write_text(json.dumps(data))
    spec_path = tmp_path / "study.json"
    spec_path.write_text('{"hardware": {"soc": "mine.json"}}  // relative to the spec')
    spec = load_spec(spec_path)
    assert spec.profile.soc == "MyAscend" and spec.profile.l0a_bytes == 32768
    canon = spec.canonical()
    assert canon["hardware"]["soc"] == "MyAscend"
    stored = spec_from_dict(json.loads(json.dumps(canon)))  # no file needed any more
    assert stored.profile.l0a_bytes == 32768
    assert stored.space.n_feasible == spec.space.n_feasible
    assert spec.space.n_feasible < spec_from_dict({}).space.n_feasible


def test_gemm_workload_and_prefill_names() -> None:
    spec = spec_from_dict({"workload": {"gemm": {"M": 1, "K": 3584, "N": 4608}}})
    assert spec.workload.gemms[0].key == (1, 3584, 4608, "fp16")
    assert spec.canonical()["workload"] == {"gemm": {"M": 1, "K": 3584, "N": 4608,
                                                     "dtype": "fp16"}}
    pre = spec_from_dict({"workload": {"phase": "prefill", "batch": 2, "seq_len": 512,
                                       "tp": 2}, "backend": {"name": "cpu"}})
    assert pre.default_study_name() == "GemmKernel-Ascend910B2-qwen2.5-7b-prefill-b2-s512-tp2-cpu"
    assert pre.workload.tokens_per_step == 1024


def test_make_backend_builds_the_simulator() -> None:
    spec = load_spec(STUDIES / "qwen25_7b_decode_910b2.json")
    backend = make_backend(spec)
    assert callable(backend.measure)


# ------------------------------------------------------------------ backend-defined spaces
class _FakeRecordedBackend(BackendBase):
    """A backend that brings its own space, as the replay backend does."""

    name = "fake"
    runs_on_soc = False

    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options

    def measure(self, config: Any, gemm: Any) -> Measurement:
        return Measurement.failure("unsupported", "the fake backend measures nothing")

    @classmethod
    def search_space(cls, options: Any, where: str) -> SearchSpace:
        if options.get("file") != "/recorded/space.json":
            raise ValueError(f"file: expected 'space.json', got {options.get('file')!r}")
        return SearchSpace([
            Param.generic("block_size_x", [16, 32, 64, 128]),
            Param.generic("block_size_y", [1, 2, 4, 8]),
            Param.generic("variant", ["a", "b"]),
        ])

    @classmethod
    def resolve_options(cls, options: Any, where: str) -> dict[str, Any]:
        file = options.get("file", "")
        return {**options, "file": file if file.startswith("/") else f"/recorded/{file}"}

    @classmethod
    def from_options(cls, options: Any, profile: Any) -> _FakeRecordedBackend:
        if not isinstance(options.get("repeats", 1), int):
            raise ValueError(f"repeats: expected an integer, got {options['repeats']!r}")
        return cls(dict(options))


@pytest.fixture
def fake_backend(monkeypatch: pytest.MonkeyPatch) -> str:
    module = types.ModuleType("aoe_fake_backends")
    module.Recorded = _FakeRecordedBackend  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "aoe_fake_backends", module)
    monkeypatch.setitem(BACKENDS, "fake", "aoe_fake_backends:Recorded")
    return "fake"


def test_backend_space_takes_spec_constraints_and_no_hardware_rules(fake_backend: str) -> None:
    doc = {"backend": {"name": fake_backend, "file": "space.json"},
           "constraints": ["block_size_x * block_size_y <= 128", "variant == 'a'"]}
    spec = spec_from_dict(doc)
    assert spec.space.names == ("block_size_x", "block_size_y", "variant")
    assert {r.name for r in spec.space.rules} == set(doc["constraints"])
    want = [(x, y) for x in [16, 32, 64, 128] for y in [1, 2, 4, 8] if x * y <= 128]
    assert spec.space.n_feasible == len(want)
    assert spec.baseline is None
    assert spec.default_study_name() == "GemmKernel-fake"
    assert "search_space" not in spec.canonical()
    assert spec_from_dict(spec.canonical()).canonical() == spec.canonical()
    assert spec.canonical()["backend"] == {"name": "fake", "file": "/recorded/space.json"}
    backend = make_backend(spec)
    assert backend.options == {"file": "/recorded/space.json"}
    with_base = spec_from_dict({**doc, "baseline": {"block_size_x": 32, "block_size_y": 4,
                                                    "variant": "a"}})
    assert with_base.baseline == {"block_size_x": 32, "block_size_y": 4, "variant": "a"}


@pytest.mark.parametrize("doc, key", [
    ({"search_space": {"tile_m": [16]}}, "search_space"),
    ({"constraints": ["block_size_x <= l0a_size"]}, "constraints[0]"),
    ({"backend": {"file": "other.json"}}, "backend.file"),
    ({"baseline": {"block_size_x": 32}}, "baseline.block_size_y"),
    ({"baseline": {"block_size_x": 32, "block_size_y": 8, "variant": "a"}}, "baseline"),
])
def test_backend_space_errors(fake_backend: str, doc: dict, key: str) -> None:
    full = {"constraints": ["block_size_x * block_size_y <= 128"], **doc}
    full["backend"] = {"name": fake_backend, "file": "space.json", **doc.get("backend", {})}
    with pytest.raises(SpecError) as info:
        spec_from_dict(full, source="fake.json")
    assert f"key '{key}'" in str(info.value)


def test_backend_option_errors_name_the_option(fake_backend: str) -> None:
    spec = spec_from_dict({"backend": {"name": fake_backend, "file": "space.json",
                                       "repeats": "many"}}, source="s.json")
    with pytest.raises(SpecError, match=r"^s\.json: key 'backend\.repeats': expected an "
                                        r"integer, got 'many'$"):
        make_backend(spec)


# ------------------------------------------------------------------ the bad-spec corpus
SEED = {"tile_m": [16, 32, 64, 128], "tile_k": [16, 32, 64], "tile_n": [64, 128, 256],
        "pipeline": [0, 1, 2]}


def space(**overrides: Any) -> dict[str, Any]:
    return {"search_space": {**SEED, **overrides}}


BAD_DOCUMENTS: list[tuple[str, Any, str, str]] = [
    # (id, document, key the message must name, a phrase it must contain)
    ("top-level list", [1, 2], "document", "object"),
    ("unknown top key", {"serch_space": {}}, "serch_space", "did you mean 'search_space'"),
    ("unknown parameter", space(tile_mm=[16]), "search_space.tile_mm", "did you mean 'tile_m'"),
    ("empty space", {"search_space": {}}, "search_space", "at least one parameter"),
    ("empty choices", space(tile_m=[]), "search_space.tile_m", "non-empty"),
    ("duplicate choices", space(tile_m=[16, 16]), "search_space.tile_m", "distinct"),
    ("duplicate by name", space(pipeline=[2, "double_buffer"]), "search_space.pipeline",
     "distinct"),
    ("scalar choice", space(tile_m=128), "search_space.tile_m", "list of choices"),
    ("bad pipeline name", space(pipeline=["quad_buffer"]), "search_space.pipeline[0]",
     "double_buffer"),
    ("string tile", space(tile_m=["16"]), "search_space.tile_m[0]", "integers"),
    ("float tile", space(tile_m=[16.5]), "search_space.tile_m[0]", "integers"),
    ("zero tile", space(tile_m=[0, 16]), "search_space.tile_m", "from 1"),
    ("bad layout", space(layout=["nz"]), "search_space.layout[0]", "z_major"),
    ("bad bool", space(l1_prefetch=[0, 2]), "search_space.l1_prefetch[1]", "0/1"),
    ("step does not divide", space(tile_m={"low": 16, "high": 250, "step": 16}),
     "search_space.tile_m.step", "divides"),
    ("low above high", space(tile_m={"low": 256, "high": 16, "step": 16}),
     "search_space.tile_m.high", "at least low"),
    ("float range", space(tile_m={"low": 16.5, "high": 256, "step": 16}),
     "search_space.tile_m.low", "integer"),
    ("range without high", space(tile_m={"low": 16}), "search_space.tile_m.high", "integer"),
    ("zero step", space(tile_m={"low": 16, "high": 32, "step": 0}), "search_space.tile_m.step",
     "from 1"),
    ("range typo", space(tile_m={"low": 16, "stop": 32}), "search_space.tile_m.stop",
     "low, high, step"),
    ("range on a category", space(layout={"low": 0, "high": 2}), "search_space.layout",
     "integer parameters"),
    ("too many constrained configs",
     space(tile_m={"low": 1, "high": 4096}, tile_k={"low": 1, "high": 4096}),
     "search_space", "narrow"),
    ("no feasible config", space(tile_m=[256], tile_k=[256], tile_n=[256]), "search_space",
     "feasible"),
    ("unknown soc", {"hardware": {"soc": "Ascend910C"}}, "hardware.soc", "Ascend910B2"),
    ("missing profile file", {"hardware": {"soc": "nowhere/chip.json"}}, "hardware.soc",
     "not found"),
    ("bad inline profile", {"hardware": {"profile": {"soc": "X", "figures": {}}}},
     "hardware.profile", "cube_cores"),
    ("constraints not a list", {"constraints": "tile_m < 64"}, "constraints", "list"),
    ("constraint not a string", {"constraints": [64]}, "constraints[0]", "expression string"),
    ("constraint does not parse", {"constraints": ["tile_m <="]}, "constraints[0]",
     "does not parse"),
    ("constraint unknown name", {"constraints": ["tile_q <= 64"]}, "constraints[0]",
     "unknown name 'tile_q'"),
    ("constraint import", {"constraints": ["__import__('os').system('true')"]},
     "constraints[0]", "not allowed"),
    ("constraint call", {"constraints": ["open('x') == 0"]}, "constraints[0]", "calls"),
    ("constraint attribute", {"constraints": ["tile_m.real > 0"]}, "constraints[0]",
     "attribute"),
    ("constraint lambda", {"constraints": ["(lambda: 1)() == 1"]}, "constraints[0]",
     "not allowed"),
    ("constraint comprehension", {"constraints": ["[x for x in (1, 2)] == 1"]},
     "constraints[0]", "not allowed"),
    ("constraint huge power", {"constraints": ["9**9**9 > tile_m"]}, "constraints[0]",
     "exponent"),
    ("constraint deep nesting", {"constraints": ["-" * 200 + "tile_m < 0"]}, "constraints[0]",
     "nested"),
    ("constraint subscript", {"constraints": ["tile_m[0] > 1"]}, "constraints[0]",
     "not allowed"),
    ("constraint unknown category", {**space(layout=["row_major"]),
                                     "constraints": ["layout == 'diagonal'"]},
     "constraints[0]", "diagonal"),
    ("constraints exclude all", {"constraints": ["tile_m > 1000"]}, "constraints",
     "satisfies"),
    ("named constraint without expression", {"constraints": [{"name": "x"}]},
     "constraints[0].expression", "string"),
    ("baseline outside space", {**space(), "baseline": {"tile_m": 48}}, "baseline.tile_m",
     "choices"),
    ("baseline unknown param", {**space(), "baseline": {"tile_x": 16}}, "baseline.tile_x",
     "did you mean"),
    ("baseline infeasible", {**space(tile_k=[256]), "baseline": {"tile_m": 128, "tile_k": 256,
                                                                  "tile_n": 256}},
     "baseline", "L0A: needs 128 KiB, has 64 KiB"),
    ("baseline not an object", {"baseline": [128, 64, 256]}, "baseline", "object"),
    ("M zero", {"workload": {"gemm": {"M": 0, "K": 16, "N": 16}}}, "workload.gemm.M",
     f"from 1 to {MAX_DIM:,}"),
    ("M absurd", {"workload": {"gemm": {"M": 10**12, "K": 16, "N": 16}}}, "workload.gemm.M",
     "from 1"),
    ("M missing", {"workload": {"gemm": {"K": 16, "N": 16}}}, "workload.gemm.M", "integer"),
    ("gemm dtype", {"workload": {"gemm": {"M": 16, "K": 16, "N": 16, "dtype": "fp8"}}},
     "workload.gemm.dtype", "fp16"),
    ("gemm and model", {"workload": {"gemm": {"M": 1, "K": 1, "N": 1}, "model": "qwen2.5-7b"}},
     "workload.model", "gemm"),
    ("unknown model", {"workload": {"model": "llama-7b"}}, "workload.model", "qwen2.5-7b"),
    ("unknown model: the other way to name one", {"workload": {"model": "llama-3.1-8b"}},
     "workload.model", '"hf_config": the path of the model\'s Hugging Face config.json'),
    ("zero batch", {"workload": {"batch": 0}}, "workload.batch", "from 1"),
    ("tp not dividing", {"workload": {"tp": 3}}, "workload.tp", "divide"),
    ("bad phase", {"workload": {"phase": "train"}}, "workload.phase", "decode"),
    ("unknown backend", {"backend": {"name": "gpu"}}, "backend.name", "simulator"),
    ("negative time", {"max_search_time": -5}, "max_search_time", "above 0"),
    ("string time", {"max_search_time": "600"}, "max_search_time", "number"),
    ("zero target", {"target_throughput": 0}, "target_throughput", "above 0"),
    ("bool target", {"target_throughput": True}, "target_throughput", "number"),
    ("objective", {"optimization_objective": "latency"}, "optimization_objective",
     "throughput"),
    ("accuracy negative", {"accuracy": {"max_relative_error": -0.1}},
     "accuracy.max_relative_error", "at least 0"),
    ("accuracy typo", {"accuracy": {"max_rel_error": 0.1}}, "accuracy.max_rel_error",
     "max_relative_error"),
    ("op name", {"op_name": "Gemm Kernel!"}, "op_name", "letters"),
    ("hardware not an object", {"hardware": "Ascend910B2"}, "hardware", "object"),
]


@pytest.mark.parametrize("doc, key, phrase", [d[1:] for d in BAD_DOCUMENTS],
                         ids=[d[0] for d in BAD_DOCUMENTS])
def test_bad_spec_names_its_key(doc: Any, key: str, phrase: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_from_dict(doc, source="studies/bad.json")
    message = str(info.value)
    assert "\n" not in message
    assert message.startswith("studies/bad.json: ")
    where = "document" if key == "document" else f"key '{key}'"
    assert f": {where}: expected " in message
    assert phrase in message
    assert info.value.key == (None if key == "document" else key)


BAD_FILES = [
    ("broken json", "bad.json", '{\n  "op_name": "x",\n  "max_search_time": ,\n}', "line 3"),
    ("duplicate key", "bad.json", '{"op_name": "a", "op_name": "b"}', "Duplicate key"),
    ("broken toml", "bad.toml", 'op_name = "x"\nmax_search_time = \n', "line 2"),
    ("NaN time", "bad.json", '{"max_search_time": NaN}', "max_search_time"),
    ("Infinity target", "bad.json", '{"target_throughput": Infinity}', "target_throughput"),
    ("toml date", "bad.toml", "max_search_time = 1979-05-27\n", "max_search_time"),
    ("unknown suffix", "bad.yaml", "op_name: x\n", ".toml"),
]


@pytest.mark.parametrize("name, text, phrase", [f[1:] for f in BAD_FILES],
                         ids=[f[0] for f in BAD_FILES])
def test_bad_file_names_the_file_and_the_place(tmp_path: Path, name: str, text: str,
                                               phrase: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    message = str(info.value)
    assert message.startswith(f"{path}: ") and "\n" not in message
    assert phrase in message


def test_missing_file() -> None:
    with pytest.raises(SpecError, match="no such file"):
        load_spec("studies/does_not_exist.json")


def test_corpus_is_large_enough() -> None:
    assert len(BAD_DOCUMENTS) + len(BAD_FILES) >= 30
    assert np.unique([d[0] for d in BAD_DOCUMENTS]).size == len(BAD_DOCUMENTS)
