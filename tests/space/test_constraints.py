"""The safe expression evaluator and the hardware capacity rules."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from aoe_optuna.hardware.capacity import hardware_rules
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.constraints import MAX_DEPTH, ConstraintError, compile_expression
from aoe_optuna.space.params import LAYOUTS

NAMES: dict[str, float | None] = {
    "tile_m": None, "tile_k": None, "tile_n": None, "pipeline": None, "layout": None,
    "l0a_size": 65536, "l0c_size": 131072, "cube_cores": 24,
}
CATEGORIES = {"layout": LAYOUTS}


# ------------------------------------------------------------------ refusals
INJECTIONS = [
    ("__import__('os').system('true')", "not allowed"),
    ("__import__('os')", "calls are not allowed"),
    ("open('/etc/passwd')", "calls are not allowed"),
    ("tile_m.__class__", "attribute access"),
    ("tile_m.real > 0", "attribute access"),
    ("(1).__class__.__bases__", "attribute access"),
    ("(lambda: 1)()", "not allowed"),
    ("lambda x: x", "Lambda is not allowed"),
    ("[x for x in (1, 2)]", "ListComp is not allowed"),
    ("{x for x in (1, 2)}", "SetComp is not allowed"),
    ("sum(x for x in (1, 2))", "calls are not allowed"),
    ("{'a': 1}", "Dict is not allowed"),
    ("tile_m[0]", "Subscript is not allowed"),
    ("9**9**9", "exponents must be integer constants"),
    ("2 ** tile_m", "exponents must be integer constants"),
    ("tile_m ** 100", "exponents must be integer constants"),
    ("1e300 > tile_m", "too large"),
    ("-" * (MAX_DEPTH + 5) + "tile_m < 0", "nested"),
    ("(" * 300 + "tile_m" + ")" * 300, "nested"),
    ("tile_m if tile_k else tile_n", "IfExp is not allowed"),
    ("(x := 1)", "NamedExpr is not allowed"),
    ("'abc' < tile_m", "compared with a categorical parameter"),
    ("layout == 'nz'", "no choice 'nz'"),
    ("layout < 'z_major'", "only with == and !="),
    ("min(tile_m)", "two or more"),
    ("max(tile_m, key=tile_k)", "two or more"),
    ("tile_m is None", "constant None is not a number"),
    ("tile_m in tile_k", "only <, <=, >, >=, ==, != comparisons"),
    ("unknown_name > 1", "unknown name 'unknown_name'"),
    ("import os", "does not parse"),
    ("tile_m <=", "does not parse"),
    ("", "non-empty"),
    ("x" * 3000, "longer than"),
]


@pytest.mark.parametrize("text, phrase", INJECTIONS, ids=[t[:30] for t, _ in INJECTIONS])
def test_refuses_code_and_unknowns_with_a_clear_message(text: str, phrase: str) -> None:
    with pytest.raises(ConstraintError) as info:
        compile_expression(text, NAMES, CATEGORIES)
    assert phrase in str(info.value)
    assert "\n" not in str(info.value)


# ------------------------------------------------------------------ evaluation
EXPRESSIONS = [
    "tile_m * tile_k * 2 <= l0a_size",
    "tile_m * tile_n * 4 <= l0c_size / 2",
    "tile_m + tile_n - tile_k > 64",
    "tile_m // tile_k >= 2 or tile_n % 32 == 0",
    "not (tile_m < tile_n) and tile_k != 48",
    "16 <= tile_m < tile_n <= 128",
    "min(tile_m, tile_n) * max(tile_k, 32, pipeline * 16) <= 8192",
    "tile_m ** 2 + tile_k ** 2 >= tile_n ** 2",
    "-tile_m + +tile_n >= 0",
    "(tile_m * tile_k * 2 * (pipeline + 1)) <= l0a_size and pipeline >= 1",
    "pipeline == 2 or tile_m * tile_k <= cube_cores * 256",
    "tile_m / tile_k == tile_n / tile_k",
    "True and tile_m > 0",
]


def _python_truth(text: str, row: dict[str, int]) -> bool:
    """The reference: Python's own evaluator, run by the test on trusted text."""
    env = {k: v for k, v in NAMES.items() if v is not None} | row
    return bool(eval(text, {"__builtins__": {}, "min": min, "max": max}, env))  # noqa: S307


@pytest.mark.parametrize("text", EXPRESSIONS)
def test_vectorised_evaluation_matches_python(text: str) -> None:
    rng = np.random.default_rng(7)
    n = 400
    cols = {
        "tile_m": rng.choice(np.arange(16, 257, 16), n),
        "tile_k": rng.choice(np.arange(16, 257, 16), n),
        "tile_n": rng.choice(np.arange(16, 257, 16), n),
        "pipeline": rng.integers(0, 3, n),
        "layout": rng.integers(0, 3, n),
    }
    rule = compile_expression(text, NAMES, CATEGORIES)
    got = rule.holds(cols)
    want = np.array([_python_truth(text, {k: int(v[i]) for k, v in cols.items()})
                     for i in range(n)])
    assert got.shape == (n,)
    np.testing.assert_array_equal(got, want)
    assert 0 < want.sum() < n or text.startswith("True")  # the sample sees both outcomes
    # Optuna's convention: violation <= 0 exactly where the rule holds.
    np.testing.assert_array_equal(rule.violation(cols) <= 0, want)


def test_category_names_compare_as_codes() -> None:
    rule = compile_expression("layout == 'z_major'", NAMES, CATEGORIES)
    cols = {"layout": np.array([0, 1, 2])}
    np.testing.assert_array_equal(rule.holds(cols), [False, False, True])
    np.testing.assert_array_equal(rule.violation(cols) <= 0, [False, False, True])
    both = compile_expression("'row_major' != layout or tile_m >= 64", NAMES, CATEGORIES)
    cols = {"layout": np.array([0, 0, 1]), "tile_m": np.array([16, 64, 16])}
    np.testing.assert_array_equal(both.holds(cols), [False, True, True])


def test_variables_are_the_parameters_read_and_constants_are_folded() -> None:
    rule = compile_expression("tile_m * tile_k * 2 <= l0a_size", NAMES)
    assert rule.variables == frozenset({"tile_m", "tile_k"})
    assert rule.name == rule.text == "tile_m * tile_k * 2 <= l0a_size"
    named = compile_expression(" l0a_size > 0 ", NAMES, name="sanity")
    assert named.variables == frozenset() and named.name == "sanity"
    assert named.holds({"tile_m": np.arange(4)}).tolist() == [True] * 4


def test_violation_grows_with_the_excess() -> None:
    rule = compile_expression("tile_m * tile_k * 2 <= l0a_size", NAMES)
    v = rule.violation({"tile_m": np.array([64, 256, 512]), "tile_k": np.array([64, 256, 256])})
    assert v[0] <= 0 < v[1] < v[2]


def test_describe_names_the_rule_and_the_values() -> None:
    rule = compile_expression("tile_m * tile_k * 2 <= l0a_size", NAMES, name="my_l0a")
    text = rule.describe({"tile_m": np.array([256]), "tile_k": np.array([256])})
    assert text == "my_l0a: `tile_m * tile_k * 2 <= l0a_size` is false for tile_k=256, tile_m=256"


def test_division_by_zero_is_not_an_exception() -> None:
    rule = compile_expression("tile_m / (tile_k - 16) < 4", NAMES)
    holds = rule.holds({"tile_m": np.array([16, 16]), "tile_k": np.array([16, 32])})
    assert holds.tolist() == [False, True]  # 16 / 0 = inf is not < 4; 16 / 16 = 1 is


# ------------------------------------------------------------------ capacity rules
def _cols(**values: int) -> dict[str, np.ndarray]:
    base = {"tile_m": 128, "tile_k": 64, "tile_n": 256, "pipeline": 2, "l1_prefetch": 1,
            "quantization": 0, "l1_k": 0}
    return {k: np.array([v]) for k, v in {**base, **values}.items()}


def _broken(cols: dict[str, np.ndarray], dtype: str = "fp16") -> list[str]:
    rules = hardware_rules(load_profile("Ascend910B2"), dtype)
    return [r.describe(cols) for r in rules if r.violation(cols)[0] > 0]


def test_huaweis_block_fits_the_910b2() -> None:
    assert _broken(_cols()) == []


def test_capacity_messages_give_the_amounts() -> None:
    # 256 x 128 x 2 B x 2 buffers = 128 KiB of L0A.
    assert _broken(_cols(tile_m=256, tile_k=128, tile_n=64)) == [
        "L0A: needs 128 KiB, has 64 KiB",
        "L1: needs 640 KiB, has 512 KiB",  # (256 + 64) x 128 x 4 K steps x 2 B x 2 stages
    ]
    assert _broken(_cols(tile_m=256, tile_k=128, tile_n=64, pipeline=1, l1_prefetch=0)) == []
    assert _broken(_cols(tile_n=512)) == [
        "L0B: needs 128 KiB, has 64 KiB", "L0C: needs 256 KiB, has 128 KiB",
        "L1: needs 640 KiB, has 512 KiB",
    ]


def test_capacity_rules_against_the_formulas() -> None:
    """Every rule on a grid, vs. the formulas of the reference (TCubeTiling, catlass)."""
    p = load_profile("Ascend910B2")
    grid = list(itertools.product([16, 48, 128, 256], [16, 24, 64, 256], [16, 128, 256],
                                  [0, 1, 2], [0, 1], [0, 1], [0, 128, 512]))
    cols = {k: np.array(v) for k, v in zip(
        ["tile_m", "tile_k", "tile_n", "pipeline", "l1_prefetch", "quantization", "l1_k"],
        zip(*grid, strict=True), strict=True)}
    rules = {r.name: r for r in hardware_rules(p, "fp16")}
    for i, (m, k, n, pipe, pre, q, l1k) in enumerate(grid):
        b = 1 if q else 2
        db = 2 if pipe == 2 else 1
        depth = l1k or k * p.l1_k_steps
        want = {
            "L0A": m * k * b * db <= 65536,
            "L0B": k * n * b * db <= 65536,
            "L0C": m * n * 4 <= 131072,
            "L1": (m + n) * depth * b * (2 if pre else 1) <= 524288,
            "align_m": m % 16 == 0,
            "align_n": n % 16 == 0,
            "align_k": k % (32 if q else 16) == 0,
            "align_l1_k": l1k % k == 0,
        }
        got = {name: bool(r.violation(cols)[i] <= 0) for name, r in rules.items()}
        assert got == want, (m, k, n, pipe, pre, q, l1k)


def test_alignment_message() -> None:
    assert _broken(_cols(tile_k=24, tile_m=48, tile_n=48)) == [
        "align_k: tile_k=24 is not a multiple of 16"
    ]
    assert "align_k: tile_k=48 is not a multiple of 32" in _broken(
        _cols(tile_k=48, tile_m=32, tile_n=32, quantization=1)
    )
