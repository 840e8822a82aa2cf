"""What the GP learns from: copula targets and the tiling-fit input features."""

from __future__ import annotations

import numpy as np
import optuna
import pytest
from scipy.stats import norm, rankdata

from aoe_optuna.samplers.gp_ucb import GPUCBSampler
from aoe_optuna.samplers.gp_ucb._targets import (
    average_ranks,
    gaussian_copula,
    standardised,
    targets,
)
from aoe_optuna.samplers.gp_ucb._tiling_features import GPInputs, TilingFeatures
from aoe_optuna.space.params import Param
from aoe_optuna.space.search_space import SearchSpace
from aoe_optuna.workload.gemm import Gemm

optuna.logging.set_verbosity(optuna.logging.ERROR)


# ------------------------------------------------------------------ targets
def test_copula_keeps_the_order_and_squeezes_the_slow_tail() -> None:
    values = np.array([100.0, 90.0, 95.0, 1.0, 99.0])  # one config 100x slower
    y = targets(values, "copula")
    assert list(np.argsort(y)) == list(np.argsort(values))
    assert abs(y.mean()) < 1e-12 and abs(y.std() - 1.0) < 1e-12
    # the outlier is one rank below the next, not 4 standard deviations away
    gaps = np.diff(np.sort(y))
    assert gaps.max() / gaps.min() < 1.5
    log = targets(values, "log")
    assert log.min() < -1.9 and np.sort(log)[1] > 0.4  # what the copula fixes


def test_copula_scores_are_normal_quantiles_of_the_ranks() -> None:
    y = gaussian_copula(np.array([3.0, 1.0, 2.0, 2.0]))
    # ranks 4, 1, 2.5, 2.5 (ties share the mean rank) of n = 4
    np.testing.assert_allclose(y, norm.ppf((np.array([4, 1, 2.5, 2.5]) - 0.5) / 4))
    assert gaussian_copula(np.array([5.0])).tolist() == [0.0]


def test_minimised_values_and_bad_transform() -> None:
    times = np.array([2.0, 8.0, 4.0])
    assert np.argmax(targets(times, "copula", maximize=False)) == 0
    assert np.argmax(targets(times, "log", maximize=False)) == 0
    np.testing.assert_allclose(standardised(np.array([3.0, 3.0])), [0.0, 0.0])
    with pytest.raises(ValueError, match="target_transform: expected one of"):
        targets(times, "rank")
    with pytest.raises(ValueError, match="model.target_transform: expected one of"):
        GPUCBSampler(space=_tile_space(), model={"target_transform": "rank"})


# ----------------------------------------------------------- tiling features
def _tile_space() -> SearchSpace:
    return SearchSpace([
        Param.known("tile_m", [16, 64, 128]),
        Param.known("tile_k", [32, 64]),
        Param.known("tile_n", [64, 96, 128]),
    ])


def test_features_are_the_tile_fit_computed_by_hand() -> None:
    space = _tile_space()
    gemm = Gemm(M=100, K=64, N=256)  # one GEMM, 4 cores
    feats = TilingFeatures(space, [gemm], cores=4)
    row = space.index({"tile_m": 64, "tile_k": 64, "tile_n": 96})
    fill_m, fill_k, fill_n, core_fill = feats(row[None, :])[0]
    assert fill_m == pytest.approx(100 / 128)  # 2 tiles of 64 rows for 100
    assert fill_k == pytest.approx(1.0)
    assert fill_n == pytest.approx(256 / 288)  # 3 tiles of 96 columns for 256
    assert core_fill == pytest.approx(6 / 8)  # 2 x 3 = 6 blocks in 2 waves of 4 cores
    row = space.index({"tile_m": 128, "tile_k": 32, "tile_n": 64})
    assert feats(row[None, :])[0, 3] == pytest.approx(1.0)  # 1 x 4 blocks: one full wave


def test_features_are_weighted_by_the_flops_of_each_gemm() -> None:
    space = _tile_space()
    big, small = Gemm(M=128, K=64, N=256, count=3), Gemm(M=100, K=64, N=256)
    row = space.index({"tile_m": 128, "tile_k": 64, "tile_n": 128})[None, :]
    both = TilingFeatures(space, [big, small], cores=2)(row)[0, 0]
    w_big = 3 * big.flops / (3 * big.flops + small.flops)
    assert both == pytest.approx(w_big * 1.0 + (1 - w_big) * 100 / 128)


def test_no_features_without_tile_sizes_or_workload() -> None:
    generic = SearchSpace([Param.generic("MWG", [16, 32]), Param.generic("VWM", [1, 2])])
    gemm = [Gemm(M=64, K=64, N=64)]
    assert TilingFeatures.for_space(generic, gemm, 8) is None
    assert TilingFeatures.for_space(_tile_space(), None, 8) is None
    assert TilingFeatures.for_space(_tile_space(), gemm, 8) is not None
    x = GPInputs(generic)(np.array([[0, 1], [1, 0]]))
    np.testing.assert_allclose(x, generic.encode(np.array([[0, 1], [1, 0]])))
    tiled = GPInputs(_tile_space(), TilingFeatures(_tile_space(), gemm, 8))
    rows = _tile_space().all_feasible()
    assert tiled(rows).shape == (rows.shape[0], _tile_space().encoded_dim + 4)


def test_from_spec_gives_the_gp_the_tiling_features() -> None:
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec("studies/qwen25_7b_decode_910b2.json")
    sampler = GPUCBSampler.from_spec(spec, seed=0)
    inputs = sampler._inputs_for(spec.space)
    assert inputs.tiling is not None and inputs.tiling.cores == spec.profile.cube_cores
    assert inputs.tiling.dims.shape == (len(spec.workload.gemms), 3)
    off = GPUCBSampler.from_spec(spec, seed=0, model={"tiling_features": False})
    assert off._inputs_for(spec.space).tiling is None


def test_a_tiling_space_without_a_workload_says_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The stored spec gives the space only: the workload is not read behind the user's back."""
    from aoe_optuna.spec.loader import load_spec
    from aoe_optuna.spec.stored import SPEC_ATTR

    spec = load_spec("studies/qwen25_7b_decode_910b2.json")
    sampler = GPUCBSampler(seed=0)
    study = optuna.create_study(direction="maximize", sampler=sampler)
    study.set_user_attr(SPEC_ATTR, spec.canonical())
    with caplog.at_level("WARNING"):
        assert sampler._inputs_for(sampler._space_for(study)).tiling is None
        sampler._inputs_for(spec.space)
    said = [r.getMessage() for r in caplog.records if "tiling features are off" in r.getMessage()]
    assert len(said) == 1 and "from_spec" in said[0] and "\n" not in said[0]


def test_a_backend_off_the_soc_gets_the_fills_without_the_core_count() -> None:
    from aoe_optuna.spec.loader import load_spec

    spec = load_spec("studies/cpu_gemm.json")
    sampler = GPUCBSampler.from_spec(spec, seed=0)
    inputs = sampler._inputs_for(spec.space)
    assert inputs.tiling is not None and inputs.tiling.cores is None
    rows = spec.space.sample_feasible(5, np.random.default_rng(0))
    assert inputs(rows).shape == (5, spec.space.encoded_dim + 3)


@pytest.mark.parametrize("values", [[3.0, 1.0, 2.0, 2.0], [5.0], [], [1.0, 1.0, 1.0],
                                    [0.3, -2.0, 0.3, 7.0, -2.0, 0.3, 1e9]])
def test_average_ranks_are_scipys(values: list[float]) -> None:
    assert np.array_equal(average_ranks(np.array(values)), rankdata(values))
