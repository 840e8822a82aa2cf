"""``aoe-tune operators --builders``: every operator's study built ahead through the
session's build pool, on a real SQLite storage, and the simulator's virtual clock
counting each kernel's build (GEMM, attention and vector alike)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import LAYER_OP_ATTR
from aoe_optuna.backends.build_time import part_build_time
from aoe_optuna.cli.main import main
from aoe_optuna.operators.layer_ops import LayerOperator, layer_operators
from aoe_optuna.operators.time_spent import chunks_of, run_time_split
from aoe_optuna.operators.units import ModelCharge
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV
from aoe_optuna.study.run.objective import is_measured
from aoe_optuna.study.storage.opening import open_storage

SPEC = {
    "op_name": "Gemm",
    "search_space": {"tile_m": [16, 32, 64, 128], "tile_n": [64, 128, 256],
                     "tile_k": [32, 64, 128], "pipeline": [1, 2]},
    "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024,
                 "attention": "tuned", "vector_kernels": "tuned"},
    "backend": {"name": "simulator", "noise": 0.02, "seed": 3, "run_s": 1.0},
}


@pytest.mark.slow
def test_a_layer_run_on_builders_builds_ahead_in_every_study_and_clocks_the_builds(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv(LEASE_DIR_ENV, str(tmp_path / "leases"))
    spec_file, db = tmp_path / "spec.json", tmp_path / "ops.db"
    spec_file.write_text(json.dumps(SPEC))
    assert main(["operators", "--config", str(spec_file), "--storage", f"sqlite:///{db}",
                 "--n-trials", "50", "--sampler", "random", "--seed", "0",
                 "--builders", "3", "--no-progress"]) == 0
    out = capsys.readouterr().out
    storage = open_storage(f"sqlite:///{db}")
    studies = [optuna.load_study(study_name=name, storage=storage)
               for name in optuna.get_all_study_names(storage) if "/" in name]
    trials = [s.get_trials() for s in studies]
    measured = [t for ts in trials for t in ts if is_measured(t)]
    assert 30 <= len(measured) <= 50  # the rest of the budget re-times the winners
    for t in measured:  # each built on the pool: 3 builders, one timed while 3 build
        assert t.user_attrs["builders"] == 3 and t.user_attrs["in_flight"] <= 4
        assert {"queue_s", "time_s", "timed_at"} <= set(t.user_attrs)
    # a chunk past the warm-up holds the four in flight; a smaller one (the warm-up's
    # rest, the budget's last) has no more in flight than it measures
    assert max(t.user_attrs["in_flight"] for t in measured) == 4
    layer = 0
    for study, ts in zip(studies, trials, strict=True):
        plan = study.user_attrs.get(LAYER_OP_ATTR)
        if plan is None:
            continue
        build = part_build_time(LayerOperator.from_plan(plan).operator_kind.part).seconds
        for t in filter(is_measured, ts):  # a kernel's build is charged as a GEMM's is
            layer += 1
            assert t.user_attrs["build_s"] == pytest.approx(build)
            assert t.user_attrs["cost_s"] > build + 1.0  # the host program's run_s
    assert layer >= 10  # five kernels, each at least its baseline and one more
    split = run_time_split(trials, modelled=True)
    builds = sum(t.user_attrs["build_s"] for t in measured)
    assert split.build_s == pytest.approx(builds)
    assert split.serial_s == pytest.approx(sum(t.user_attrs["cost_s"] for t in measured))
    # the clock overlaps builds on 3 builders: at least the builds spread over them, and
    # short of building and timing one after another
    assert split.pooled_s is not None and builds / 3 <= split.pooled_s < split.serial_s
    chunks = chunks_of(trials)
    assert len(chunks) >= len(studies)  # each study's chunks, in the order they ran
    line = " ".join(out.split("time: ")[1].split())
    got = re.search(r"on 3 builders ([\d,]+) s \(built and timed in turn ([\d,]+) s\)", line)
    assert got is not None, line
    assert float(got[1].replace(",", "")) == pytest.approx(split.pooled_s, abs=0.5)
    assert f"build {builds:,.0f} s" in line and "queue " in line


def test_a_modelled_kernels_charge_follows_the_spec() -> None:
    ops = layer_operators(spec_from_dict(SPEC).workload)
    attention = next(o for o in ops if o.operator_kind.part == "attention")
    default = ModelCharge.of(attention, {})
    assert default.build_s == part_build_time("attention").seconds and default.run_s == 0.0
    given = ModelCharge.of(attention, {"build_s": 5, "run_s": 1, "repeats": 10,
                                       "warmup": 0})
    assert given.cost_s(1e-3) == pytest.approx(5 + 10 * 1e-3 + 1)


def test_negative_builders_are_one_line_exit_2_nothing_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec_file, db = tmp_path / "spec.json", tmp_path / "ops.db"
    spec_file.write_text(json.dumps(SPEC))
    assert main(["operators", "--config", str(spec_file), "--storage", f"sqlite:///{db}",
                 "--builders", "-1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["aoe-tune operators: error: --builders: expected 0 (no build pool) or a "
                   "positive number of builder cores"]
    assert not db.exists()


def test_a_chunk_on_builders_holds_what_is_in_flight() -> None:
    from aoe_optuna.operators.scheduler import ShapeHistory, make_scheduler
    from aoe_optuna.operators.tuner import OperatorTuner, TunerOptions

    spec = spec_from_dict(SPEC)
    warm = ShapeHistory(weight=1, roofline_s=1e-6, best_s=[1e-5] * 8, group="g")
    sizes = {}
    for workers, builders in ((1, None), (1, 15), (2, 3), (8, 23)):
        options = TunerOptions(budget=100, scheduler=make_scheduler("gradient"),
                               n_workers=workers, builders=builders)
        tuner = OperatorTuner(optuna.storages.InMemoryStorage(), "memory", "p", spec,
                              options)
        sizes[(workers, builders)] = tuner.chunk_size(warm)
    # 4 per worker without builders; with them, each worker's builders + the one timed
    assert sizes == {(1, None): 4, (1, 15): 16, (2, 3): 8, (8, 23): 192}


def test_a_worker_joins_a_modelled_study_at_the_charge_its_tuner_stored(
        tmp_path: Path) -> None:
    from aoe_optuna.hardware.profile import load_profile
    from aoe_optuna.operators.units import LayerUnit
    from aoe_optuna.study.session import SamplerRequest

    url = f"sqlite:///{tmp_path / 'ops.db'}"
    storage = open_storage(url)
    op = layer_operators(spec_from_dict(SPEC).workload)[0]
    profile = load_profile("Ascend910B2")
    doc = {"name": "simulator", "build_s": 7.0, "run_s": 2.0}
    made = LayerUnit.create(storage, url, "p", op, profile, SamplerRequest("random", seed=0),
                            backend_doc=doc)
    joined = LayerUnit.join(open_storage(url), url, made.study.study_name,
                            SamplerRequest(seed=1), worker_index=1)
    assert joined.evaluator.charge == made.evaluator.charge == ModelCharge(7.0, 2.0)  # type: ignore[union-attr]
