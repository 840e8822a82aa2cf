"""Calibrating half of a family's figures and predicting the rest, as the splits script does."""

from __future__ import annotations

import numpy as np

from aoe_optuna.calibration.family_splits import Figures, family_splits, markdown


def test_a_chip_uniformly_slower_is_predicted_within_the_band_it_states() -> None:
    rng = np.random.default_rng(3)
    model = rng.uniform(10, 500, 10)
    published = 1.3 * model * np.exp(rng.normal(0, 0.03, 10))
    result = family_splits(Figures("mine", "gemm_preload", model, published), seed=1)
    assert result.written == 5 and result.predicted == 25
    assert result.other_median < 0.06 < result.shipped_median  # the scale was learnt
    assert result.share_inside >= 0.8 and result.worse == 0
    again = family_splits(Figures("mine", "gemm_preload", model, published), seed=1)
    assert again == result  # seeded


def test_a_refused_family_keeps_the_shipped_model_and_reports_its_error() -> None:
    model = np.array([10.0, 20.0, 40.0, 80.0, 160.0, 320.0])
    published = model * np.array([1.0, 1.1, 0.9, 1.02, 0.98, 1.05])  # already right
    result = family_splits(Figures("mine", "swiglu", model, published), seed=0)
    for split in result.splits:
        if not split.written:
            assert split.other_errors == split.shipped_errors and not split.worse
    assert "| mine | swiglu | 6 |" in "\n".join(markdown([result]))
