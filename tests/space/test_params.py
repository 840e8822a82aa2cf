"""Parameters: canonical spellings, numeric codes, kinds inferred for foreign params."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.space.params import (
    KNOWN_PARAMS,
    LAYOUTS,
    OPT_LEVELS,
    SCHEDULES,
    Param,
    ParamError,
    canonical_value,
    default_config,
    from_code,
    to_code,
)


@pytest.mark.parametrize("name, given, canonical", [
    ("pipeline", "double_buffer", 2), ("pipeline", "none", 0), ("pipeline", 1, 1),
    ("pipeline", 2.0, 2),
    ("opt_level", "o3", "O3"), ("opt_level", 1, "O1"), ("opt_level", "O0", "O0"),
    ("l1_prefetch", True, 1), ("l1_prefetch", "false", 0), ("output_align", 1, 1),
    ("quantization", 1, True), ("quantization", "false", False), ("quantization", False, False),
    ("tile_m", 128.0, 128), ("unroll_factor", 0, 0),
    ("layout", "z_major", "z_major"), ("schedule", "latency", "latency"),
])
def test_canonical_values(name: str, given, canonical) -> None:
    value = canonical_value(name, given)
    assert value == canonical and type(value) is type(canonical)


@pytest.mark.parametrize("name, given, phrase", [
    ("pipeline", 3, "0/1/2"), ("pipeline", "triple_buffer", "double_buffer"),
    ("pipeline", True, "0/1/2"),
    ("opt_level", "O4", "O3"), ("opt_level", 7, "O3"),
    ("l1_prefetch", 2, "0/1"), ("tile_m", "128", "integers"), ("tile_m", 16.5, "integers"),
    ("tile_m", True, "integers"), ("layout", "nz", "z_major"), ("schedule", 0, "balanced"),
    ("tile_x", 16, "unknown parameter 'tile_x'"),
])
def test_bad_values_say_what_was_expected(name: str, given, phrase: str) -> None:
    with pytest.raises(ParamError) as info:
        canonical_value(name, given)
    assert phrase in str(info.value)


@pytest.mark.parametrize("name, values", [
    ("pipeline", [0, 1, 2]), ("opt_level", OPT_LEVELS), ("schedule", SCHEDULES),
    ("layout", LAYOUTS), ("quantization", [False, True]), ("l1_prefetch", [0, 1]),
    ("tile_k", [16, 32, 256]),
])
def test_codes_round_trip(name: str, values) -> None:
    for v in values:
        assert from_code(name, to_code(name, v)) == v
    codes = [to_code(name, v) for v in values]
    assert all(isinstance(c, int) for c in codes)


def test_named_codes_are_positions_in_the_name_list() -> None:
    assert to_code("layout", "z_major") == 2
    assert to_code("opt_level", "O2") == 2
    assert to_code("pipeline", "single_buffer") == 1
    p = Param.known("layout", ["z_major", "row_major"])
    assert p.codes.tolist() == [2, 0]  # codes are global, not positions in this space
    assert p.index("row_major") == 1


def test_known_param_accepts_any_spelling() -> None:
    p = Param.known("pipeline", ["none", "double_buffer"])
    assert p.choices == (0, 2) and p.kind == "ordinal"
    assert p.index("double_buffer") == p.index(2) == 1
    with pytest.raises(ParamError, match="not one of its choices"):
        p.index("single_buffer")


def test_generic_params_infer_their_kind() -> None:
    assert Param.generic("x", [1, 2, 4]).kind == "int"
    assert Param.generic("x", [1.0, 2.0]).kind == "int"
    assert Param.generic("x", [0.5, 1]).kind == "real"
    assert Param.generic("x", [True, False]).kind == "bool"
    cat = Param.generic("x", ["a", "b"])
    assert cat.kind == "categorical" and cat.codes.tolist() == [0, 1]
    real = Param.generic("x", [0.5, 1.5])
    assert real.codes.dtype == np.float64


def test_log_scaling_is_for_sizes_spanning_a_ratio() -> None:
    assert Param.known("tile_m", [16, 32, 64, 128, 256]).is_log_scaled
    assert not Param.known("tile_m", [112, 128, 144]).is_log_scaled
    assert not Param.known("unroll_factor", [0, 2, 4]).is_log_scaled  # 0 has no log
    assert not Param.known("pipeline", [0, 1, 2]).is_log_scaled


def test_defaults_are_canonical_and_huaweis_block() -> None:
    d = default_config()
    assert set(d) == set(KNOWN_PARAMS)
    assert (d["tile_m"], d["tile_n"], d["tile_k"], d["pipeline"]) == (128, 256, 64, 2)
    assert d["quantization"] is False and d["opt_level"] == "O2"
    for name, value in d.items():
        assert canonical_value(name, value) == value
