"""Kernel Tuner cache reader: plain, gzip, truncated end, failure strings, the real files."""

from __future__ import annotations

import gzip

import numpy as np
import pytest
from kt_fixture import TABLE, cache_text, shared_spaces, write_cache

from aoe_optuna.backends.replay.kt_cache import FAILURE_KINDS, CacheFileError, read_cache


def test_plain_and_gzip_read_the_same(tmp_path):
    plain = read_cache(write_cache(tmp_path))
    gz = read_cache(write_cache(tmp_path, gz=True))
    assert plain.keys == gz.keys == ("a", "b", "c", "d")
    assert plain.configs == gz.configs
    np.testing.assert_array_equal(plain.values, gz.values)
    assert not plain.truncated
    assert plain.varying == ("a", "b", "d") and plain.fixed == {"c": 4}
    assert len(plain) == len(TABLE)


def test_values_failures_and_costs(tmp_path):
    rec = read_cache(write_cache(tmp_path))
    by_config = {(c[0], c[1], c[3]): i for i, c in enumerate(rec.configs)}
    for key, expected in TABLE.items():
        i = by_config[key]
        if isinstance(expected, str):
            assert np.isnan(rec.values[i]) and rec.failures[i] == expected
        else:
            assert rec.values[i] == expected and rec.failures[i] is None
    np.testing.assert_allclose(rec.cost_s, 0.15)  # (100 + 10 + 40) ms


def test_truncated_end_keeps_complete_entries(tmp_path):
    text = cache_text()
    cut = text[: text.rindex('"3,1,4,1"') + 30]  # mid-way through the last entry
    path = tmp_path / "cut.json"
    path.write_text(cut)
    rec = read_cache(path)
    assert rec.truncated and len(rec) == len(TABLE) - 1
    gz = tmp_path / "cut.json.gz"
    gz.write_bytes(gzip.compress(cut.encode()))
    assert len(read_cache(gz)) == len(TABLE) - 1


def test_cut_gzip_stream_is_tolerated(tmp_path):
    data = gzip.compress(cache_text().encode())
    path = tmp_path / "cut.json.gz"
    path.write_bytes(data[: len(data) - 12])  # drop the gzip trailer and some data
    rec = read_cache(path)
    assert 0 < len(rec) <= len(TABLE)


def test_bad_files_say_which_file_and_key(tmp_path):
    missing = tmp_path / "nope.json"
    with pytest.raises(CacheFileError, match="nope.json"):
        read_cache(missing)
    bad = tmp_path / "bad.json"
    bad.write_text(cache_text().replace('"RuntimeFailedConfig"', '"Exploded"'))
    with pytest.raises(CacheFileError, match=r"bad.json: key 'cache.3,1,4,1.time'"):
        read_cache(bad)
    headless = tmp_path / "headless.json"
    headless.write_text('{"cache": {}}')
    with pytest.raises(CacheFileError, match="tune_params_keys"):
        read_cache(headless)


def test_failure_kinds_map_onto_measurement_kinds():
    assert FAILURE_KINDS == {"InvalidConfig": "infeasible", "CompilationFailedConfig": "build",
                             "RuntimeFailedConfig": "runtime", "ErrorConfig": "runtime"}


def test_error_config_reads_as_a_failed_config(tmp_path):
    path = tmp_path / "error.json"
    path.write_text(cache_text().replace('"RuntimeFailedConfig"', '"ErrorConfig"'))
    rec = read_cache(path)
    assert "ErrorConfig" in rec.failures
    i = rec.failures.index("ErrorConfig")
    assert np.isnan(rec.values[i])


@pytest.mark.skipif(not (shared_spaces() / "gemm_RTX_2080_Ti.json.gz").is_file(),
                    reason="../shared/spaces/gemm_RTX_2080_Ti.json.gz not present")
def test_real_gemm_file():
    rec = read_cache(shared_spaces() / "gemm_RTX_2080_Ti.json.gz")
    assert len(rec) == 17_956 and not rec.truncated
    assert rec.fixed == {"KWG": 32, "KWI": 2, "STRM": 0, "STRN": 0, "PRECISION": 32}
    assert np.nanmin(rec.values) == pytest.approx(11.483, abs=5e-4)  # README: 11.483 ms
    assert all(f is None for f in rec.failures)


@pytest.mark.skipif(not (shared_spaces() / "convolution_milo_A4000.json.gz").is_file(),
                    reason="../shared/spaces/convolution_milo_A4000.json.gz not present")
def test_real_convolution_file_has_failures():
    rec = read_cache(shared_spaces() / "convolution_milo_A4000.json.gz")
    assert len(rec) == 4_362
    assert sum(f is None for f in rec.failures) == 4_201  # README: 4,201 valid
    assert rec.failures.count("RuntimeFailedConfig") == 155
    assert rec.failures.count("CompilationFailedConfig") == 6
