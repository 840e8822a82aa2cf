"""Generated failure spaces: deterministic, tile x width regions fail, one near-optimal config."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from aoe_optuna.backends.replay.kt_cache import read_cache
from aoe_optuna.bench.failure_spaces import RECIPES, build, generate

SPACES = Path(__file__).resolve().parents[3] / "shared" / "spaces"
needs_spaces = pytest.mark.skipif(not SPACES.is_dir(), reason="needs ../shared/spaces")


@needs_spaces
@pytest.mark.parametrize("recipe", RECIPES, ids=lambda r: r.name)
def test_regions_fail_and_one_config_stays_near_the_optimum(recipe, tmp_path) -> None:
    src = read_cache(SPACES / recipe.source)
    summary = generate(SPACES / recipe.source, tmp_path / "g.json.gz", recipe.seed)
    out = read_cache(tmp_path / "g.json.gz")
    was_ok, now_ok = ~np.isnan(src.values), ~np.isnan(out.values)
    new_failures = was_ok & ~now_ok
    assert 0.02 <= new_failures.sum() / was_ok.sum() <= 0.07  # a few percent
    assert len(summary["regions"]) >= 2
    keys = list(src.keys)
    covered = np.zeros(len(out), dtype=bool)
    for tile, tv, width, wv in summary["regions"]:
        assert "tile" in tile or "WG" in tile
        assert width == "block_size_x" or width.startswith("VW")
        covered |= np.array([c[keys.index(tile)] == tv and c[keys.index(width)] == wv
                             for c in out.configs])
    assert (new_failures == (covered & was_ok)).all()  # every new failure is in a region
    # the optimum keeps its time; nothing else is within 5 % of it
    assert np.nanmin(out.values) == np.nanmin(src.values)
    assert int((out.values <= 1.05 * np.nanmin(out.values)).sum()) == 1
    assert int((src.values <= 1.05 * np.nanmin(src.values)).sum()) > 1


@needs_spaces
def test_the_same_bytes_from_the_same_recipe(tmp_path) -> None:
    recipe = RECIPES[0]
    a = build(recipe, SPACES, tmp_path / "a")
    b = build(recipe, SPACES, tmp_path / "b")
    assert a.read_bytes() == b.read_bytes()
    other = generate(SPACES / recipe.source, tmp_path / "c.json.gz", recipe.seed + 1)
    assert (tmp_path / "c.json.gz").read_bytes() != a.read_bytes()
    assert other["failed"] > 0
