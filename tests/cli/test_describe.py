"""aoe-tune describe: against the seed space, catlass's default, per GEMM; operator bands."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from aoe_optuna.backends.simulator.backend import AscendSimulator
from aoe_optuna.calibration.bands import shipped_bands
from aoe_optuna.cli.main import main
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config, to_code
from aoe_optuna.space.presets import CATLASS_DEFAULT
from aoe_optuna.workload.gemm import Gemm


def _spec(tmp_path: Path) -> Path:
    path = tmp_path / "small.json"
    path.write_text(json.dumps({
        "search_space": {"tile_m": [64, 128], "tile_n": [128, 256], "tile_k": [64],
                         "l1_k": [256], "split_k": [1, 4], "layout_b": ["col_major", "zN"]},
        "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 16384, "N": 512, "dtype": "fp16"}},
        "backend": {"name": "simulator"},
    }))
    return path


def test_describe_compares_with_the_seed_space_and_catlass(tmp_path: Path, capsys) -> None:
    assert main(["describe", str(_spec(tmp_path))]) == 0
    out = capsys.readouterr().out
    lines = {line.split()[0]: line for line in out.splitlines()[1:] if line.strip()}
    assert "this space's optimum is" in lines["seed"]
    # catlass's default kernel, with the layout the space lists first (column-major B)
    sim = AscendSimulator(load_profile("Ascend910B2"))
    config = {**default_config(), **CATLASS_DEFAULT, "layout_b": "col_major"}
    cols = {k: np.array([to_code(k, v)]) for k, v in config.items()}
    seconds = float(sim.latency(cols, Gemm(64, 16384, 512))[0])
    assert f"catlass default  {64 / seconds:,.4g} tokens/s" in lines["catlass"]
    # a long-K GEMM of 4 blocks on 24 cores: its best kernel splits K
    gemm_line = next(line for line in out.splitlines() if line.startswith("    gemm"))
    assert "split-K x4" in gemm_line


def test_describe_names_the_operators_an_operator_run_tunes(tmp_path: Path, capsys) -> None:
    path = tmp_path / "tuned.json"
    path.write_text(json.dumps({"workload": {"model": "qwen2.5-7b", "attention": "tuned",
                                             "vector_kernels": "tuned"}}))
    assert main(["describe", "--no-optimum", str(path)]) == 0
    out = capsys.readouterr().out
    assert ("tuned operators  add_rmsnorm, attention, rmsnorm, rope, swiglu: charged as the "
            "library's default kernels here") in out
    assert "attention" in out.split("step ")[1] and "modelled" in out
    # each tuned operator's held-out band: a checked kind its number, the others named
    decode = shipped_bands()["decode_attention"]
    assert f"band             decode attention: {decode.text()}" in out
    # every vector kernel: none held out (cann-bench's RmsNorm and SwiGlu are seen)
    unchecked = next(line for line in out.splitlines() if "unchecked" in line)
    assert unchecked.split(": ")[1].split(", ") == ["add rmsnorm", "rmsnorm", "rope", "swiglu"]
