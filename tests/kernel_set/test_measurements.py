"""A kernel-set operator's measurements live in an Optuna study on a real storage: written
whole, read back the same by a resume, failures kept so their configs are not retried."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.backends.base import Measurement
from aoe_optuna.kernel_set.measurements import OperatorStudy
from aoe_optuna.spec.loader import spec_from_dict
from aoe_optuna.study.create import StudyError
from aoe_optuna.study.storage.opening import open_storage

SPEC = spec_from_dict({"search_space": {"tile_m": [16, 64], "tile_n": [128, 256],
                                        "tile_k": [64]},
                       "hardware": {"soc": "Ascend910B2"},
                       "workload": {"gemm": {"M": 1, "K": 512, "N": 512}}}, source="t")
PLAN = {"K": 512, "N": 512, "dtype": "fp16", "batch": 1, "tuning_shapes": [1, 8]}


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_measurements_are_read_back_by_a_resume(tmp_path, kind):
    url = f"sqlite:///{tmp_path / 'm.db'}" if kind == "sqlite" else str(tmp_path / "m.log")
    space = SPEC.space
    rows = space.all_feasible()
    study = OperatorStudy(open_storage(url), "run/op/512x512", space, PLAN)
    study.record(rows[0], 1, Measurement.success(20e-6, 60.0, extra={"build_s": 60.0}))
    study.record(rows[0], 8, Measurement.success(25e-6, 0.01, extra={"build_s": 0.0}))
    study.record(rows[1], 8, Measurement.failure("build", "it broke", cost_s=6.0))
    again = OperatorStudy(open_storage(url), "run/op/512x512", space, PLAN).measured
    assert again.count == 3 and again.builds == 1 and again.n_failed == 1
    assert again.ms == [1, 8] and again.latency_s == pytest.approx([20e-6, 25e-6])
    assert np.array_equal(np.array(again.rows), rows[[0, 0]])
    assert again.failed == {int(space.flat_id(rows[1][None, :])[0])}
    assert again.cost_s == pytest.approx(66.01)
    assert len(again.pairs) == 2


def test_a_study_of_another_operator_is_refused(tmp_path):
    storage = open_storage(f"sqlite:///{tmp_path / 'm.db'}")
    OperatorStudy(storage, "run/op", SPEC.space, PLAN)
    with pytest.raises(StudyError, match="holds another kernel-set operator"):
        OperatorStudy(storage, "run/op", SPEC.space, {**PLAN, "tuning_shapes": [1, 4]})
