"""Attention and the vector kernels as operators of a run: the workload's calls, their
spaces, the run on a real SQLite storage, the knowledge base and the refusals."""

from __future__ import annotations

import itertools
import json
import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import optuna
import pytest

from aoe_optuna.aicore.vector.vector_ops import best_vector_config
from aoe_optuna.attrs import ATTR_BASELINE
from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_lookup import lookup_layer_op
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import LayerOperator, layer_operators
from aoe_optuna.operators.scheduler import ShapeHistory, make_scheduler
from aoe_optuna.operators.state import trial_latency
from aoe_optuna.operators.tuner import OperatorTuner, TunerOptions
from aoe_optuna.space.attention_space import FIELDS, attention_space, tiling_of
from aoe_optuna.space.decode_attention import (
    AttentionTiling,
    DecodeAttention,
    cann_default_tiling,
    violations,
)
from aoe_optuna.spec.loader import load_spec, spec_from_dict
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.storage.opening import open_storage

SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [16, 32, 64, 128], "tile_n": [64, 128, 256],
                     "tile_k": [32, 64, 128], "pipeline": [1, 2]},
    "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024,
                 "attention": "tuned", "vector_kernels": "tuned"},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3},
}
PARENT = "Gemm-Ascend910B2-qwen2.5-7b-decode-b1-attntuned-vktuned-operators"
PROFILE = load_profile("Ascend910B2")


@pytest.fixture()
def spec_file(tmp_path: Path) -> Path:
    path = tmp_path / "spec.json"
    path.write_text(json.dumps(SPEC))
    return path


# ---------------------------------------------------------------- the workload's calls
def test_tuned_parts_are_listed_with_the_default_tilings_charge() -> None:
    wl = {"batch": 64, "seq_len": 4096}
    tuned = spec_from_dict({"workload": {**wl, "attention": "tuned",
                                         "vector_kernels": "tuned"}}).workload
    default = spec_from_dict({"workload": {**wl, "attention": "default",
                                           "vector_kernels": "default"}}).workload
    assert default.layer_ops == ()  # a fixed charge: nothing to tune
    assert tuned.fixed_s == pytest.approx(default.fixed_s)
    kinds = {op.kind: op for op in tuned.layer_ops}
    assert set(kinds) == {"attention", "add_rmsnorm", "rmsnorm", "rope", "swiglu"}
    assert kinds["attention"].count == 28 and kinds["add_rmsnorm"].count == 55
    charged = sum(op.count * op.charged_s for op in tuned.layer_ops)
    assert charged == pytest.approx(tuned.details["attention_s"]
                                    + tuned.details["elementwise_s"])
    # a tuned latency replaces its call's charge, and only that
    gemms = {g.name: 1e-5 for g in tuned.gemms}
    faster = {**gemms, "attention": kinds["attention"].charged_s / 2}
    saved = tuned.step_time(gemms) - tuned.step_time(faster)
    assert saved == pytest.approx(28 * kinds["attention"].charged_s / 2)


def test_serving_buckets_prefix_their_calls_and_share_operators() -> None:
    wl = spec_from_dict({"workload": {"batch": [1, 8], "seq_len": 1024, "weights": [3, 1],
                                      "vector_kernels": "tuned"}}).workload
    names = [op.name for op in wl.layer_ops]
    assert "b1/add_rmsnorm" in names and "b8/swiglu" in names
    assert {op.count for op in wl.layer_ops if op.name == "b1/rope"} == {3 * 28}
    ops = layer_operators(wl)
    assert len(ops) == 8 and all(op.kind != "attention" for op in ops)  # 4 kinds x 2 batches


def test_prefill_attention_is_listed_at_the_default_tilings_charge_when_tuned() -> None:
    wl = {"phase": "prefill", "batch": 1, "seq_len": 1024}
    tuned = spec_from_dict({"workload": {**wl, "attention": "tuned"}}).workload
    default = spec_from_dict({"workload": {**wl, "attention": "default"}}).workload
    assert default.layer_ops == () and tuned.fixed_s == pytest.approx(default.fixed_s)
    (call,) = tuned.layer_ops
    assert call.kind == "attention" and call.part == "attention" and call.count == 28
    assert call.count * call.charged_s == pytest.approx(tuned.details["attention_s"])
    (op,) = layer_operators(tuned)
    assert op.op_name == "prefill_attention" and op.dims == "prefill-b1-q28-kv4-d128-s1024"


# ---------------------------------------------------------------- the attention space
def test_attention_space_is_exactly_the_models_feasible_tilings() -> None:
    shape = DecodeAttention(batch=1, q_heads=28, kv_heads=4, head_dim=128, context=1024)
    space = attention_space(PROFILE, shape)
    feasible = {tuple(c[f] for f in FIELDS) for c in space.configs(space.all_feasible())}
    every = itertools.product(*(p.choices for p in space.params))
    assert feasible == {t for t in every if not violations(PROFILE, shape, AttentionTiling(*t))}
    default = cann_default_tiling(PROFILE, shape)
    assert tuple(getattr(default, f) for f in FIELDS) in feasible
    bad = {"kv_split": 1, "block_tile": 128, "l1_tile": 256, "l0_tile": 16, "pipeline": 2}
    assert space.explain(bad) == ["tiles: expected l0_tile <= l1_tile <= block_tile; tiles: "
                                  "expected each tile to divide the next larger one"]
    assert violations(PROFILE, shape, tiling_of(bad))


# ---------------------------------------------------------------- the run
def test_operators_run_tunes_attention_and_vector_kernels_in_one_budget(
        tmp_path: Path, spec_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db, kb = tmp_path / "ops.db", tmp_path / "kb.json"
    assert main(["operators", "--config", str(spec_file), "--storage", f"sqlite:///{db}",
                 "--n-trials", "30", "--sampler", "tpe", "--seed", "0", "--kb", str(kb),
                 "--no-progress"]) == 0
    out = capsys.readouterr().out
    assert "step split: GEMMs" in out and "attention" in out and "vector" in out
    assert "% of roofline" in out.split("step split:")[1]
    storage = open_storage(f"sqlite:///{db}")
    names = set(optuna.get_all_study_names(storage))
    layer = {f"{PARENT}/attention/b1-q28-kv4-d128-s1024", f"{PARENT}/add_rmsnorm/1x3584",
             f"{PARENT}/rmsnorm/1x3584", f"{PARENT}/rope/1x4096", f"{PARENT}/swiglu/1x18944"}
    assert layer <= names and len(names) == 1 + 5 + 5  # parent, 5 GEMM shapes, 5 kernels
    spent = 0
    for name in names - {PARENT}:
        trials = optuna.load_study(study_name=name, storage=storage).get_trials()
        done = [t for t in trials if is_measured(t)]
        spent += len(done)
        assert done, name  # every operator got measurements from the one budget
        if name in layer:
            assert done[0].user_attrs.get(ATTR_BASELINE)  # the CANN default came first
            plan = optuna.load_study(study_name=name, storage=storage).user_attrs["layer_op"]
            space = LayerOperator.from_plan(plan).space(PROFILE)
            assert all(not space.explain(t.params) for t in done)  # none infeasible
    assert spent <= 30
    entries = KnowledgeBase.load(kb).entries()
    assert {e.get("kind", "gemm") for e in entries} == {"gemm", "attention", "vector"}
    assert len(entries) == 10
    problem = {"batch": 1, "q_heads": 28, "kv_heads": 4, "head_dim": 128, "context": 1024,
               "page_tokens": 128, "kv_layout": "BNSD"}
    hit = lookup_layer_op(kb, "Ascend910B2", "decode_attention", "fp16", problem)
    assert hit is not None and set(hit["config"]) == set(FIELDS)
    assert hit["value"] == pytest.approx(1e6 / hit["latency_us"], rel=1e-6)


def test_tokens_per_s_replaces_each_charge_with_the_winners_latency(tmp_path: Path,
                                                                    spec_file: Path) -> None:
    url = f"sqlite:///{tmp_path / 't.db'}"
    spec = load_spec(spec_file)
    options = TunerOptions(budget=30, scheduler=make_scheduler("gradient"), sampler="tpe",
                           seed=1)
    result = OperatorTuner(open_storage(url), url, "run", spec, options).run()
    wl = spec.workload
    by_name = {n: r.shipped_s for r in result.shapes for n in r.shape.names}
    gemm_s = sum(g.count * by_name[g.name] for g in wl.gemms)
    tuned_s = sum(op.count * by_name[op.name] for op in wl.layer_ops)
    stays_s = wl.fixed_s - sum(op.count * op.charged_s for op in wl.layer_ops)
    assert result.tokens_per_s == pytest.approx(1 / (gemm_s + tuned_s + stays_s))
    for r in result.shapes:
        if isinstance(r.shape, LayerOperator):  # the model is exact: the winner <= default
            assert r.baseline_s is not None and r.latency_s <= r.baseline_s
    assert result.tokens_per_s < result.roofline_tokens_per_s
    assert [p.name for p in result.split][:3] == ["GEMMs", "attention", "vector"]
    assert math.fsum(p.seconds for p in result.split) == pytest.approx(1 / result.tokens_per_s)


def test_export_of_attention_and_vector_studies_writes_kb_entries_and_kernels(
        tmp_path: Path, spec_file: Path, capsys: pytest.CaptureFixture[str]) -> None:
    db = f"sqlite:///{tmp_path / 'e.db'}"
    kernels = tmp_path / "kernels"
    assert main(["operators", "--config", str(spec_file), "--storage", db, "--n-trials", "20",
                 "--sampler", "random", "--seed", "2", "--no-progress",
                 "--export-dir", str(kernels)]) == 0
    run_out = capsys.readouterr().out
    written = {p.name for p in kernels.iterdir()}
    # each kernel is written, or named as left to the library's faster default
    files = {"attention b1-q28-kv4-d128-s1024": "attention_b1-q28-kv4-d128-s1024.h",
             **{f"{k} 1x{w}": f"{k}_1x{w}.cpp" for k, w in (
                 ("rmsnorm", 3584), ("add_rmsnorm", 3584), ("swiglu", 18944), ("rope", 4096))}}
    for label, name in files.items():
        kept = f"not written {label}: the library's default kernel is kept" in run_out
        assert kept != (name in written), label
        assert kept == (f"library default kept: {label}:" in run_out), label
    assert written <= set(files.values()) and "not exported" not in run_out
    study = f"{PARENT}/attention/b1-q28-kv4-d128-s1024"
    kb = tmp_path / "kb.json"
    header = tmp_path / "aoe_catlass_fai.h"
    assert main(["export", "--storage", db, "--study-name", study, "--kb", str(kb),
                 "--output", str(header)]) == 0
    out = capsys.readouterr().out
    assert "added Ascend910B2/decode_attention/fp16 batch=1" in out
    assert f"wrote {header}: catlass flash-attention-infer (decode) instantiation" in out
    assert [e["kind"] for e in KnowledgeBase.load(kb).entries()] == ["attention"]
    best = optuna.load_study(study_name=study, storage=db).best_trial.params
    tuned = dict(re.findall(r"constexpr uint32_t kTuned(\w+) = (\d+);", header.read_text()))
    assert tuned == {"KvSplit": str(best["kv_split"]), "BlockTile": str(best["block_tile"]),
                     "L1Tile": str(best["l1_tile"]), "L0Tile": str(best["l0_tile"]),
                     "Pipeline": str(best["pipeline"])}
    assert f"Study {study} in {db}" in header.read_text()

    norm = next(n for n in optuna.get_all_study_names(db) if n.startswith(f"{PARENT}/rmsnorm"))
    kernel = tmp_path / "rmsnorm.cpp"
    assert main(["export", "--storage", db, "--study-name", norm, "--kb", str(kb),
                 "--output", str(kernel)]) == 0
    assert f"wrote {kernel}: Ascend C rmsnorm kernel" in capsys.readouterr().out
    best = optuna.load_study(study_name=norm, storage=db).best_trial.params
    declared = dict(re.findall(r"^constexpr \w+ (TILE_LEN|CORES|BUFFER_NUM) = (\d+);",
                               kernel.read_text(), flags=re.MULTILINE))
    assert declared == {"TILE_LEN": str(best["tile_len"]), "CORES": str(best["cores"]),
                        "BUFFER_NUM": str(2 if best["double_buffer"] else 1)}

    refused = tmp_path / "k.h"
    assert main(["export", "--storage", db, "--study-name", study, "--catlass-header",
                 str(refused)]) == 2
    err = capsys.readouterr().err.strip()
    assert "--catlass-header" in err and "--output writes" in err and len(err.splitlines()) == 1
    assert not refused.exists()


# ---------------------------------------------------------------- refusals
@pytest.mark.parametrize("workload,backend,message", [
    ({"attention": "tunned"}, None, "attention"),
    ({"vector_kernels": "fast"}, None, "vector_kernels"),
    ({"vector_kernels": "tuned"}, {"name": "cpu"}, "needs the simulator"),
])
def test_a_bad_value_or_backend_is_one_line_exit_2_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], workload: dict,
        backend: dict | None, message: str) -> None:
    doc = {**SPEC, "workload": {"model": "qwen2.5-7b", **workload}}
    if backend is not None:
        doc["backend"] = backend
    path = tmp_path / "bad.json"
    path.write_text(json.dumps(doc))
    db = tmp_path / "never.db"
    code = main(["operators", "--config", str(path), "--storage", f"sqlite:///{db}"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and message in err and len(err.splitlines()) == 1, err
    assert not db.exists()


@dataclass
class OneOperator:
    """A scheduler that gives every chunk to one operator until it is measured out."""

    target: int
    warmup: int = 8
    chunk: int = 4
    name: str = "one-operator"

    def next_shape(self, shapes: Sequence[ShapeHistory]) -> int | None:
        return None if shapes[self.target].exhausted else self.target


def test_a_small_kernel_space_is_measured_out_without_idle_proposals(tmp_path: Path) -> None:
    """A batch-1 add + RMSNorm has 20 tilings: the last chunk asks for what is left, so
    the space is measured out exactly instead of the sampler proposing 100 repeats
    before the chunk gives up."""
    doc = {**SPEC, "workload": {"model": "qwen2.5-7b", "batch": 1, "vector_kernels": "tuned"}}
    spec = spec_from_dict(doc)
    url = f"sqlite:///{tmp_path / 'x.db'}"
    options = TunerOptions(budget=100, scheduler=OneOperator(target=5), seed=0)
    tuner = OperatorTuner(open_storage(url), url, "run", spec, options)
    unit = tuner.units[5]
    assert tuner.shapes[5].kind == "add_rmsnorm" and unit.space.n_feasible == 20
    tuner.run()
    assert not tuner.parent.user_attrs.get("closed")  # nothing ended by idle proposals
    trials = unit.study.get_trials(deepcopy=False)
    assert sum(is_measured(t) for t in trials) == 20
    assert len(trials) <= 22  # and few proposals past them (the sampler knows the space)
    best = min(op_s for op_s in (trial_latency(t) for t in trials if is_measured(t)))
    exhaustive = best_vector_config(PROFILE, tuner.shapes[5].problem)[1].total_s
    assert best == pytest.approx(exhaustive, rel=1e-4)  # latency_us keeps 3 decimals


def test_the_scheduler_aims_at_what_a_tiling_can_reach() -> None:
    wl = spec_from_dict({"workload": {"batch": 1, "attention": "tuned",
                                      "vector_kernels": "tuned"}}).workload
    for op in layer_operators(wl):
        default_s = op.model(PROFILE)(op.default_config(PROFILE))
        assert op.roofline_s(PROFILE) <= op.bound_s(PROFILE) <= default_s
        if op.kind != "attention":  # launch-bound: the roofline is no target for a tiling
            assert op.bound_s(PROFILE) > 100 * op.roofline_s(PROFILE)


@pytest.mark.parametrize(("phase", "seq_len", "window_dims"), [
    ("decode", 32768, "b1-q16-kv8-d256-s4096"),
    ("prefill", 8192, "prefill-b1-q16-kv8-d256-s8192-w4096"),
])
def test_sliding_window_layers_are_an_operator_of_their_own(phase: str, seq_len: int,
                                                            window_dims: str) -> None:
    """gemma-2-9b: 21 layers see every key, 21 a 4096-token window; two attention problems,
    each with its calls, its feasible CANN default and a plan that rebuilds it."""
    config = json.loads((Path(__file__).parents[2] / "studies/models/gemma-2-9b.json")
                        .read_text())
    wl = spec_from_dict({"workload": {"hf_config": config, "phase": phase, "batch": 1,
                                      "seq_len": seq_len, "attention": "tuned"}}).workload
    assert [(c.name, c.count) for c in wl.layer_ops] == [("attention", 21),
                                                         ("sliding_attention", 21)]
    full, window = layer_operators(wl)
    assert window.dims == window_dims and full.dims != window_dims
    assert window.model(PROFILE)(window.default_config(PROFILE)) < \
        full.model(PROFILE)(full.default_config(PROFILE))
    for op in (full, window):
        assert LayerOperator.from_plan(op.plan_entry("p")) == op
        assert not op.space(PROFILE).explain(op.default_config(PROFILE))
