"""SearchSpace against brute force: counts, enumeration, sampling, partial feasibility,
encoding, nearest feasible config, Optuna distributions, and the 11.8M space."""

from __future__ import annotations

import itertools
import tracemalloc
from collections import Counter
from typing import Any

import numpy as np
import optuna.distributions as od
import pytest

import aoe_optuna.space.search_space as space_module
from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.constraints import compile_expression
from aoe_optuna.space.params import KNOWN_PARAMS, Param
from aoe_optuna.space.search_space import SearchSpace

PROFILE = load_profile("Ascend910B2")


def small_space(with_free: bool = True) -> SearchSpace:
    """A few hundred configs: tile sizes, pipeline, and (free) compile options."""
    params = [
        Param.known("tile_m", [16, 64, 128, 256]),
        Param.known("tile_k", [16, 32, 64, 128, 256]),
        Param.known("tile_n", [64, 128, 256]),
        Param.known("pipeline", ["none", "double_buffer"]),
        Param.known("l1_prefetch", [0, 1]),
    ]
    if with_free:
        params += [Param.known("layout", ["row_major", "z_major"]),
                   Param.known("opt_level", ["O1", "O2", "O3"])]
    names = {p.name: None for p in params} | {
        k: v for k, v in PROFILE.expression_names().items()}
    user = compile_expression("tile_m <= tile_n * 2", names)
    return SearchSpace(params, [user, *hardware_rules(PROFILE, "fp16")])


def brute_force(space: SearchSpace) -> set[tuple[Any, ...]]:
    """Feasible configs by checking each one alone, in plain Python."""
    feasible = set()
    for values in itertools.product(*(p.choices for p in space.params)):
        config = dict(zip(space.names, values, strict=True))
        m, k, n = config["tile_m"], config["tile_k"], config["tile_n"]
        db = 2 if config["pipeline"] == 2 else 1
        stages = 2 if config["l1_prefetch"] else 1
        if (m <= n * 2 and m * k * 2 * db <= 65536 and k * n * 2 * db <= 65536
                and m * n * 4 <= 131072
                and (m + n) * k * PROFILE.l1_k_steps * 2 * stages <= 524288):
            feasible.add(values)
    return feasible


def as_set(space: SearchSpace, rows: np.ndarray) -> set[tuple[Any, ...]]:
    return {tuple(c.values()) for c in space.configs(rows)}


@pytest.fixture(params=[True, False], ids=["materialised", "chunked"])
def materialised(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> bool:
    """Run a test on both code paths: core held in memory, and core streamed in chunks."""
    if not request.param:
        monkeypatch.setattr(space_module, "MATERIALISE_LIMIT", 10)
        monkeypatch.setattr(space_module, "CHUNK", 37)
    return bool(request.param)


def test_free_and_core_split() -> None:
    s = small_space()
    assert [s.names[i] for i in s.core] == ["tile_m", "tile_k", "tile_n", "pipeline",
                                            "l1_prefetch"]
    assert [s.names[i] for i in s.free] == ["layout", "opt_level"]
    assert s.size == 4 * 5 * 3 * 2 * 2 * 2 * 3
    assert s.core_size * s.free_size == s.size


def test_feasible_count_is_exact(materialised: bool) -> None:
    s = small_space()
    assert s.materialised == materialised
    assert s.n_feasible == len(brute_force(s))
    assert 0 < s.n_feasible < s.size


def test_iter_feasible_is_exactly_the_feasible_set(materialised: bool) -> None:
    s = small_space()
    rows = np.concatenate(list(s.iter_feasible(chunk=50)))
    ids = s.flat_id(rows)
    assert len(np.unique(ids)) == len(ids)  # no duplicates
    assert as_set(s, rows) == brute_force(s)
    assert s.is_feasible(rows).all()


def test_sample_feasible_is_feasible_and_distinct(materialised: bool) -> None:
    s = small_space()
    rows = s.sample_feasible(200, np.random.default_rng(0))
    assert rows.shape == (200, len(s.names))
    assert s.is_feasible(rows).all()
    assert len(np.unique(s.flat_id(rows))) == 200
    # Excluded configs never come back; asking for more than exist returns them all.
    excluded = {int(i) for i in s.flat_id(rows)}
    want = 10_000 if materialised else 50  # the chunked path samples by rejection
    rest = s.sample_feasible(want, np.random.default_rng(1), exclude=excluded)
    assert s.is_feasible(rest).all()
    if materialised:
        assert rest.shape[0] == s.n_feasible - 200
    else:
        assert rest.shape[0] == 50
    assert not excluded & {int(i) for i in s.flat_id(rest)}


def test_sample_feasible_is_roughly_uniform(materialised: bool) -> None:
    s = small_space(with_free=False)
    n_feasible = s.n_feasible
    rng = np.random.default_rng(3)
    counts: Counter[int] = Counter()
    draws = 60 * n_feasible // 4
    for _ in range(60):
        counts.update(int(i) for i in s.flat_id(s.sample_feasible(n_feasible // 4, rng)))
    assert len(counts) == n_feasible
    expected = draws / n_feasible  # 60 per draw round x 1/4 = 15 per config
    freq = np.array(list(counts.values()))
    # Binomial(60, 1/4) per config: mean 15, sd 3.4; nothing far in the tails.
    assert freq.min() >= expected - 5 * 3.4 and freq.max() <= expected + 5 * 3.4
    chi2 = ((freq - expected) ** 2 / expected).sum()
    assert chi2 < 1.5 * n_feasible


def test_feasible_choices_is_exact() -> None:
    """Choice allowed iff some feasible completion of the partial assignment takes it."""
    s = small_space()
    feasible = brute_force(s)
    order = ["tile_n", "tile_m", "pipeline", "tile_k", "l1_prefetch", "layout"]
    rng = np.random.default_rng(5)
    for _ in range(40):
        # A random feasible config gives the prefix; the next param in order is masked.
        target = list(feasible)[rng.integers(len(feasible))]
        depth = int(rng.integers(0, len(order)))
        fixed = {name: s.params[s.names.index(name)].choices.index(
            target[s.names.index(name)]) for name in order[:depth]}
        name = order[depth]
        j = s.names.index(name)
        mask = s.feasible_choices(fixed, name)
        want = np.zeros(len(s.params[j].choices), dtype=bool)
        for config in feasible:
            if all(config[s.names.index(k)] == s.params[s.names.index(k)].choices[v]
                   for k, v in fixed.items()):
                want[s.params[j].choices.index(config[j])] = True
        np.testing.assert_array_equal(mask, want)
        assert mask[s.params[j].choices.index(target[j])]


def test_feasible_choices_on_a_chunked_core_never_allows_a_dead_end(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(space_module, "MATERIALISE_LIMIT", 10)
    s = small_space()
    feasible = brute_force(s)
    # tile_m=256 and tile_n=64 breaks the user rule: every tile_k is then a dead end.
    mask = s.feasible_choices({"tile_m": 3, "tile_n": 0}, "tile_k")
    assert not mask.any()
    mask = s.feasible_choices({"tile_m": 1, "tile_n": 2}, "tile_k")
    for c, allowed in enumerate(mask):
        k = s.params[1].choices[c]
        exists = any(f[0] == 64 and f[2] == 256 and f[1] == k for f in feasible)
        assert not allowed or exists


def test_encode_decode_round_trip() -> None:
    s = small_space()
    rows = s.sample_feasible(100, np.random.default_rng(2))
    x = s.encode(rows)
    assert x.shape == (100, s.encoded_dim)
    assert x.min() >= 0.0 and x.max() <= 1.0
    np.testing.assert_array_equal(s.decode(x), rows)
    # Slightly perturbed encodings still decode to the same config.
    np.testing.assert_array_equal(s.decode(x + 0.01), rows)


def test_encoding_uses_log2_for_sizes_and_one_hot_for_categories() -> None:
    s = small_space()
    assert s.encoded_dim == 5 + 2 + 1  # five scalar params, layout one-hot, opt_level rank
    assert s.categorical_dims == [5, 6]
    tile_k = s._encoders[1][:, 0]
    np.testing.assert_allclose(np.diff(tile_k), 0.25)  # 16..256 are equal steps in log2
    layouts = s.encode(np.array([[0, 0, 0, 0, 0, 0, 0], [0, 0, 0, 0, 0, 1, 0]]))[:, 5:7]
    np.testing.assert_array_equal(layouts, [[1, 0], [0, 1]])


def test_nearest_feasible() -> None:
    s = small_space()
    feasible = brute_force(s)
    bad = {"tile_m": 256, "tile_k": 256, "tile_n": 256, "pipeline": 2, "l1_prefetch": 1,
           "layout": "z_major", "opt_level": "O3"}
    assert s.explain(bad)
    near = s.nearest_feasible(bad)
    assert tuple(near.values()) in feasible
    assert near["layout"] == "z_major" and near["opt_level"] == "O3"  # free params kept
    good = next(iter(feasible))
    config = dict(zip(s.names, good, strict=True))
    assert s.nearest_feasible(config) == config


def test_explain_lists_each_broken_rule() -> None:
    s = small_space()
    config = {"tile_m": 256, "tile_k": 256, "tile_n": 64, "pipeline": 2, "l1_prefetch": 1,
              "layout": "row_major", "opt_level": "O2"}
    got = s.explain(config)
    assert got[0].startswith("tile_m <= tile_n * 2: ")
    assert "L0A: needs 256 KiB, has 64 KiB" in got
    assert "L0B: needs 64 KiB, has 64 KiB" not in got  # exactly full is fine
    assert "L1: needs 1280 KiB, has 512 KiB" in got


def test_distributions() -> None:
    s = small_space()
    d = s.distributions()
    assert isinstance(d["tile_m"], od.CategoricalDistribution)  # 16, 64, 128, 256: no step
    assert d["tile_m"].choices == (16, 64, 128, 256)
    assert isinstance(d["layout"], od.CategoricalDistribution)
    ranged = SearchSpace([Param.known("tile_m", range(16, 257, 16)),
                          Param.known("pipeline", [0, 1, 2])])
    dr = ranged.distributions()
    assert dr["tile_m"] == od.IntDistribution(16, 256, step=16)
    assert dr["pipeline"] == od.CategoricalDistribution([0, 1, 2])  # ordinal: no int range
    for name, dist in dr.items():
        for value in ranged.params[ranged.names.index(name)].choices:
            assert dist._contains(dist.to_internal_repr(value))


def test_fixed_values_of_untuned_params_reach_the_rules() -> None:
    s = SearchSpace([Param.known("tile_m", [64, 128, 256]), Param.known("tile_k", [64, 128])],
                    hardware_rules(PROFILE, "fp16"))
    assert s.fixed["pipeline"] == KNOWN_PARAMS["pipeline"].default == 2
    # tile_n is fixed at its default 256 and L0 is double buffered: L0B allows
    # tile_k <= 64 (64 x 256 x 2 B x 2 = 64 KiB), L0C tile_m <= 128 (128 x 256 x 4).
    assert s.fixed["tile_n"] == 256
    assert as_set(s, s.all_feasible()) == {(64, 64), (128, 64)}


def test_bad_spaces_are_refused() -> None:
    with pytest.raises(ValueError, match="at least one parameter"):
        SearchSpace([])
    with pytest.raises(ValueError, match="duplicate parameter"):
        SearchSpace([Param.known("tile_m", [16]), Param.known("tile_m", [32])])
    with pytest.raises(ValueError, match="duplicate choices"):
        SearchSpace([Param.known("tile_m", [16, 16])])
    rule = compile_expression("x < 3", {"x": None})
    with pytest.raises(ValueError, match="unknown variables"):
        SearchSpace([Param.generic("y", [1, 2])], [rule])


def test_compile_space_is_counted_and_sampled_without_materialising() -> None:
    """The 11,796,480-point space: counted and sampled in a few MB, enumerated in chunks."""
    t = list(range(16, 257, 16))
    params = [
        Param.known("tile_m", t), Param.known("tile_k", t), Param.known("tile_n", t),
        Param.known("pipeline", [0, 1, 2]), Param.known("l1_prefetch", [0, 1]),
        Param.known("output_align", [0, 1]), Param.known("opt_level", ["O0", "O1", "O2", "O3"]),
        Param.known("schedule", ["default", "balanced", "throughput", "latency"]),
        Param.known("unroll_factor", [0, 2, 4, 8, 16]),
        Param.known("layout", ["row_major", "col_major", "z_major"]),
    ]
    tracemalloc.start()
    s = SearchSpace(params, hardware_rules(PROFILE, "fp16"))
    n = s.n_feasible
    rows = s.sample_feasible(1000, np.random.default_rng(0))
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert s.size == 11_796_480
    seed = SearchSpace(params[:6], hardware_rules(PROFILE, "fp16"))
    assert n == seed.n_feasible * 240
    assert peak < 64 * 2**20  # the whole feasible set as int64 rows would be ~450 MB
    assert s.is_feasible(rows).all() and len(np.unique(s.flat_id(rows))) == 1000
    first = next(s.iter_feasible(chunk=10_000))
    assert first.shape[0] <= 10_000 + 240 and s.is_feasible(first).all()
