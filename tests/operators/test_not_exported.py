"""`aoe-tune operators --export-dir`: every kernel the run cannot write is named in a
closing line and the run exits 3; where the kernel exists, none is refused."""

from __future__ import annotations

import json
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.cli.operators import NOT_EXPORTED
from aoe_optuna.study.run.objective import is_measured

SPACE = {"tile_m": [16, 64], "tile_n": [128, 256], "tile_k": [64], "l1_k": [256],
         "preload": [0, 1], "split_k": [1, 2, 4]}


def _spec(tmp_path: Path, dtype: str) -> Path:
    path = tmp_path / f"{dtype}.json"
    path.write_text(json.dumps({
        "op_name": "Catlass", "search_space": SPACE, "baseline": None,
        "workload": {"gemm": {"M": 64, "K": 4096, "N": 4096, "dtype": dtype}},
        "backend": {"name": "simulator", "seed": 0}}))
    return path


def _run(tmp_path: Path, dtype: str) -> tuple[int, str]:
    db = f"sqlite:///{tmp_path / 'ops.db'}"
    return main(["operators", "--config", str(_spec(tmp_path, dtype)), "--storage", db,
                 "--n-trials", "12", "--sampler", "random", "--seed", "0", "--no-progress",
                 "--export-dir", str(tmp_path / "kernels")]), db


@pytest.mark.slow  # about 10 s on a busy 2-core machine: a whole run on SQLite
def test_a_kernel_the_product_lacks_is_named_last_and_the_run_exits_3(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, db = _run(tmp_path, "fp32")  # catlass has no fp32 GEMM: no tiling changes that
    out, err = capsys.readouterr()
    assert code == NOT_EXPORTED == 3
    (line,) = [x for x in out.splitlines() if x.startswith("not exported ")]
    assert line == ("not exported gemm 64x4096x4096-fp32: catlass header: dtype fp32: the "
                    "catlass kernel is rendered for ['bf16', 'fp16'] (int8 through "
                    "quantization=true)")
    label = "gemm 64x4096x4096-fp32"
    assert err.splitlines()[-1] == (f"aoe-tune operators: not exported 1 of 1 kernels: {label} "
                                    "(each line above says why)")
    assert list((tmp_path / "kernels").iterdir()) == []
    # the tuning is kept: the shape's study holds its measurements
    shape = [n for n in optuna.get_all_study_names(db) if n.endswith("-fp32")]
    assert len(shape) == 1
    assert any(is_measured(t) for t in optuna.load_study(study_name=shape[0],
                                                         storage=db).trials)


@pytest.mark.slow  # about 10 s, as above
def test_where_catlass_has_the_kernel_every_tuning_exports(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, db = _run(tmp_path, "fp16")
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "not exported" not in out + err
    assert len(list((tmp_path / "kernels").glob("*.h"))) == 1
    # Preload with split-K is never proposed: catlass's split-K kernel has no Preload
    # (measured: Optuna's random sampler proposes it, the study prunes it unmeasured)
    trials = [t for name in optuna.get_all_study_names(db) if name.count("/") == 2
              for t in optuna.load_study(study_name=name, storage=db).trials
              if is_measured(t)]
    assert len(trials) >= 12 - 2  # the run's budget, re-timing included
    assert not [t.params for t in trials if t.params["preload"] and t.params["split_k"] > 1]
    assert {t.params["split_k"] for t in trials} > {1} and {t.params["preload"] for t in trials} \
        == {0, 1}
