"""An operator run on the npu backend end to end, against a toolkit tree laid out like
CANN 8.5.0 that compiles nothing (``toolkit_trees.py``): every attention and vector kernel
gets a study whose plan keeps the backend (a worker rebuilds it from there), and each
candidate is its kind's program, built by real CMake through the build cache, so each
fails as a ``build`` of that kernel. In run mode ``cpu`` (no ACL for the host programs)
each kind is one line on stderr and left out, and the GEMM shapes are tuned."""

from __future__ import annotations

import json
import os
from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import ATTR_FAILURE_KIND, LAYER_OP_ATTR
from aoe_optuna.cli.main import main
from aoe_optuna.cli.operators import NOTHING_MEASURED
from aoe_optuna.study.storage.opening import open_storage
from tests.backends.npu.toolkit_trees import make_catlass, make_toolkit

pytestmark = pytest.mark.slow  # about 10 s: real CMake runs per candidate


def _spec(tmp_path: Path, run_mode: str) -> Path:
    home = make_toolkit(tmp_path / "tk", "8.5.0", soc="Ascend910B2")
    catlass = make_catlass(tmp_path / "catlass", legacy=False)
    spec = tmp_path / f"{run_mode}.json"
    spec.write_text(json.dumps({
        "op_name": "Gemm", "hardware": {"soc": "Ascend910B2"},
        "search_space": {"tile_m": [64, 128], "tile_n": [128], "tile_k": [64]},
        "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024,
                     "attention": "tuned", "vector_kernels": "tuned"},
        "backend": {"name": "npu", "kernel": "simple", "cann": str(home),
                    "catlass": str(catlass), "run_mode": run_mode, "timeout_s": 60}}))
    return spec


def _run(tmp_path: Path, spec: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv("AOE_BUILD_CACHE", str(tmp_path / "cache"))
    url = f"sqlite:///{tmp_path / 'ops.db'}"
    # a toolkit that compiles nothing: every measurement fails, nothing to export
    assert main(["operators", "--config", str(spec), "--storage", url, "--n-trials", "10",
                 "--sampler", "random", "--seed", "0", "--no-progress"]) == NOTHING_MEASURED
    return url


def test_each_layer_kernel_is_built_as_its_kinds_program(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    spec = _spec(tmp_path, "npu")
    storage = open_storage(_run(tmp_path, spec, monkeypatch))
    backend = json.loads(spec.read_text())["backend"]
    layer = {}
    for name in optuna.get_all_study_names(storage):
        study = optuna.load_study(study_name=name, storage=storage)
        plan = study.user_attrs.get(LAYER_OP_ATTR)
        if plan is not None:
            assert plan["backend"] == backend  # what a worker builds its backend from
            layer[plan["kind"]] = [t for t in study.get_trials()
                                   if t.state == optuna.trial.TrialState.FAIL]
    assert set(layer) == {"attention", "add_rmsnorm", "rmsnorm", "rope", "swiglu"}
    spare = len(os.sched_getaffinity(0)) - 1  # the npu default: one core keeps the card's
    for kind, failed in layer.items():
        assert failed, f"{kind}: no candidate measured"
        assert {t.user_attrs[ATTR_FAILURE_KIND] for t in failed} == {"build"}, kind
        # built ahead on the npu's default pool, as a GEMM shape's study is
        builders = {t.user_attrs.get("builders") for t in failed}
        assert builders == ({spare} if spare >= 1 else {None}), kind
        assert all(t.user_attrs["build_s"] > 0 for t in failed), kind  # the build's time


def test_a_run_mode_the_host_programs_lack_leaves_them_out_in_one_line_each(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    storage = open_storage(_run(tmp_path, _spec(tmp_path, "cpu"), monkeypatch))
    lines = [ln for ln in capsys.readouterr().err.splitlines() if "not timed" in ln]
    assert len(lines) == 5, lines
    assert any(ln.startswith("aoe-tune operators: attention b1-q28-kv4-d128-s1024: not "
                             "timed on the npu backend: run_mode=cpu: catlass kernels run in")
               for ln in lines)
    assert any(ln.startswith("aoe-tune operators: swiglu 1x18944: not timed on the npu "
                             "backend: run_mode=cpu: the Ascend C swiglu kernel") for ln in lines)
    names = optuna.get_all_study_names(storage)
    assert not any("/attention/" in n or "/swiglu/" in n for n in names)
    assert any("/qkv_proj/" in n for n in names)  # the GEMM shapes are tuned
