"""Which constants a family keeps (the shipped ones, a scale, a scale and an overhead)
and how wide the band it states is, on few kernels."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.calibration.chip_fit import fit_chip, predictive_errors, refusal
from aoe_optuna.calibration.spread_prior import PRIOR_KERNELS, pooled_variance, within_source


def test_a_family_whose_misses_are_per_shape_keeps_the_shipped_constants() -> None:
    """Seven kernels off by ±15% about no offset (a shape trend, not the chip): a scale
    would fit the half's noise, so the family is refused with the reason."""
    model = np.array([10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0])
    measured = model * np.exp([0.15, -0.15, 0.12, -0.1, 0.14, -0.16, 0.02])
    chip = fit_chip(model, measured)
    assert not chip.offset.clear
    why = refusal(chip)
    assert why is not None and "a scale would fit noise" in why and "7 kernels" in why


def test_a_clear_offset_is_fitted_and_its_band_is_narrower_than_the_shipped_ones() -> None:
    model = np.array([10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0])
    measured = 1.5 * model * np.exp([0.03, -0.02, 0.01, -0.03, 0.02, 0.0, -0.01])
    chip = fit_chip(model, measured)
    assert chip.offset.clear and refusal(chip) is None
    assert chip.scale == pytest.approx(1.5, rel=0.02)
    assert chip.leave_one_out.high < chip.shipped.high


def test_three_kernels_that_agree_state_the_prior_spread_not_their_own() -> None:
    """Three kernels within 1% of the model do not make a 1% band: their variance is
    pooled with the shipped model's within-source spread, and thirty that agree as well
    state a much narrower band (their own weighs more)."""
    prior, df = within_source()
    assert prior > 0.0 and df > 10  # from the shipped held-out figures
    few = predictive_errors(np.array([100.0, 101.0, 99.0]), np.array([100.0, 100.0, 100.0]))
    assert few.high > 10 * 0.01  # ten times their own scatter
    rng = np.random.default_rng(0)
    many_measured = 100.0 * np.exp(rng.normal(0, 0.01, 30))
    many = predictive_errors(np.full(30, 100.0), many_measured)
    assert many.high < few.high / 2
    variance, pooled_df = pooled_variance(0.0, 2)
    assert pooled_df == 2 + PRIOR_KERNELS and variance == pytest.approx(
        PRIOR_KERNELS * prior / pooled_df)


def test_a_band_is_never_narrower_than_the_kernels_own_errors() -> None:
    """Twelve kernels whose misses bunch in two groups (a dtype's rows 25% fast, the
    rest within 2%): a t on their pooled variance would put the 80th percentile under
    the fast group, which holds a third of them; the stated band reaches it."""
    model = np.full(12, 100.0)
    measured = model / np.exp([-0.29] * 4 + [0.02, -0.02, 0.01, -0.01, 0.0, 0.02, -0.02,
                                             0.01])
    errors = np.abs(model / measured - 1.0)
    band = predictive_errors(model, measured)
    assert band.high >= float(np.quantile(errors, 0.8))
    assert band.median >= float(np.median(errors))


def test_a_refused_family_states_no_narrower_band_than_its_leave_one_out() -> None:
    """Refused, the family keeps the shipped model but states the wider of that model's
    band and the scale fit's leave-one-out band on the same kernels; fitted, it states
    its leave-one-out band."""
    model = np.array([10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0])
    measured = model * np.exp([0.15, -0.15, 0.12, -0.1, 0.14, -0.16, 0.02])
    chip = fit_chip(model, measured)
    assert refusal(chip) is not None
    stated = chip.stated(False)
    assert stated.high >= max(chip.shipped.high, chip.leave_one_out.high)
    assert stated.median >= max(chip.shipped.median, chip.leave_one_out.median)
    assert chip.stated(True) == chip.leave_one_out


def test_a_refused_family_s_profile_carries_the_band_the_command_stated(tmp_path) -> None:
    """A refused family is written with the shipped constants (its times unchanged) and
    the band the command printed for it; the profile read back states that band for the
    kind, not the shipped bands.json one (unchecked for RMSNorm)."""
    from aoe_optuna.calibration.bands import band_for, shipped_band
    from aoe_optuna.calibration.calibrated_profile import calibrated_text
    from aoe_optuna.calibration.chip_fit import chip_calibration, fit_families
    from aoe_optuna.hardware.profile import load_profile

    model = np.array([10.0, 20.0, 40.0, 80.0, 160.0, 320.0, 640.0])
    measured = model * np.exp([0.15, -0.15, 0.12, -0.1, 0.14, -0.16, 0.02])
    (outcome,) = fit_families(np.array(["rmsnorm"] * 7), model, measured)
    assert not outcome.written and outcome.fit is not None
    stated = outcome.fit.stated(False)
    base = load_profile("Ascend910B2")
    path = tmp_path / "chip.json"
    path.write_text(calibrated_text(base, chip_calibration(base.soc, [outcome], {})))
    chip = load_profile(str(path))
    assert chip.calibration is not None
    fit = chip.calibration.family("rmsnorm")
    assert fit is not None and (fit.scale, fit.launch_us) == (1.0, 0.0)
    assert chip.calibration.seconds("rmsnorm", 1e-5) == 1e-5
    band = band_for("rmsnorm", chip)
    assert band.high == pytest.approx(stated.high, abs=1e-4)
    assert band.median == pytest.approx(stated.median, abs=1e-4)
    assert band.text() != shipped_band("rmsnorm").text()
