"""scripts/diagnose_proposals.py: true quality of a run's proposals, and its bad-input errors."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from script_module import load_script

from aoe_optuna.bench.command import exhaustive_for
from aoe_optuna.bench.runner import Case

ROOT = Path(__file__).resolve().parents[1]
DECODE = ROOT / "studies" / "qwen25_7b_decode_910b2.json"


@pytest.fixture(scope="module")
def script():
    return load_script("diagnose_proposals")


def test_incumbent_is_never_better_than_the_best_config_measured(script):
    case = Case.from_path(DECODE)
    q = script.proposal_quality(case, "random", {}, seeds=2, budget=20,
                                optimum=exhaustive_for(case, None).optimum)
    assert q["incumbent"].shape == (2,) and q["deciles"].shape == (2, 10)
    # the incumbent is one of the measured configs, picked by a noisy measurement
    assert np.all(q["incumbent"] >= q["best"]) and np.all(q["best"] >= 1.0)
    assert np.all(q["within_1pct"] <= 20)
    # random proposals of this space: their median is far from the optimum
    assert np.median(q["deciles"]) > 1.1


def test_bad_inputs_exit_2_in_one_line(script, tmp_path, capsys):
    assert script.main(["--space", str(tmp_path / "none.json"), "--sampler", "random"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.endswith("no such study spec") and "\n" not in err
    assert script.main(["--space", str(DECODE), "--sampler", "tpe:{bad"]) == 2
    assert "expected NAME:JSON-object" in capsys.readouterr().err
