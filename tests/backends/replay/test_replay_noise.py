"""Noise as it was recorded: a replayed measurement drawn from the config's repeats."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from aoe_optuna.backends.replay.backend import ReplayBackend, recorded_noise
from aoe_optuna.backends.replay.kt_cache import read_cache
from aoe_optuna.spec.loader import SpecError, spec_from_dict

TIMES = {"1,1": [1.0, 1.2, 0.8, 1.0], "1,2": [2.0, 2.0, 2.0, 2.0], "2,1": [3.0, 3.3, 2.7]}


def cache(folder: Path, with_times: bool = True) -> Path:
    entries = {}
    for k, times in TIMES.items():
        a, b = map(int, k.split(","))
        entries[k] = {"a": a, "b": b, "time": sum(times) / len(times),
                      **({"times": times} if with_times else {})}
    entries["2,2"] = {"a": 2, "b": 2, "time": "CompilationFailedConfig", "times": []}
    path = folder / ("noisy.json" if with_times else "plain.json")
    path.write_text(json.dumps({"tune_params_keys": ["a", "b"],
                                "tune_params": {"a": [1, 2], "b": [1, 2]},
                                "objective": "time", "cache": entries}))
    return path


def test_repeats_are_read_padded_and_counted(tmp_path):
    rec = read_cache(cache(tmp_path))
    assert rec.n_repeats.tolist() == [4, 4, 3, 0]
    assert rec.repeats.shape == (4, 4) and np.isnan(rec.repeats[2, 3])


def test_a_measurement_is_the_mean_of_seeded_draws_from_the_repeats(tmp_path):
    backend = ReplayBackend.from_options({"path": str(cache(tmp_path)), "seed": 3})
    m = backend.measure({"a": 1, "b": 1})
    assert m.ok and len(m.samples_s) == 4
    assert set(m.samples_s) <= {1e-3, 1.2e-3, 0.8e-3}
    assert m.latency_s == pytest.approx(np.mean(m.samples_s))
    assert backend.measure({"a": 1, "b": 1}).latency_s == m.latency_s  # draw 0, same seed
    again = [backend.remeasure({"a": 1, "b": 1}, None, d).latency_s for d in range(1, 30)]
    assert len(set(again)) > 3 and np.mean(again) == pytest.approx(1e-3, rel=0.05)
    other = backend.with_noise_seed(4).measure({"a": 1, "b": 1})
    assert other.samples_s != m.samples_s
    assert backend.measure({"a": 1, "b": 2}).latency_s == pytest.approx(2e-3)  # no spread
    assert not backend.measure({"a": 2, "b": 2}).ok  # a failure stays one
    assert "mean of as many as recorded (median 4) draws" in backend.noise_note()


def test_repeats_option_sets_the_runs_per_measurement(tmp_path):
    backend = ReplayBackend.from_options({"path": str(cache(tmp_path)), "repeats": 1})
    m = backend.measure({"a": 2, "b": 1})
    assert len(m.samples_s) == 1 and m.latency_s * 1e3 in (3.0, 3.3, 2.7)
    assert backend.recorded_latency_s({"a": 2, "b": 1}) == pytest.approx(3e-3)
    assert backend.recorded_latency_s({"a": 2, "b": 2}) == float("inf")


def test_no_repeats_or_noise_none_serve_the_recorded_mean_and_say_so(tmp_path):
    plain = ReplayBackend.from_options({"path": str(cache(tmp_path, with_times=False))})
    m = plain.measure({"a": 1, "b": 1})
    assert m.latency_s == pytest.approx(1e-3) and m.samples_s == ()
    assert "records no repeated timings" in plain.noise_note()
    assert ReplayBackend.timing_noise({"path": str(cache(tmp_path, with_times=False))}) is None
    off = ReplayBackend.from_options({"path": str(cache(tmp_path)), "noise": "none"})
    assert off.measure({"a": 1, "b": 1}).latency_s == pytest.approx(1e-3)
    assert "noise-free (noise: none)" in off.noise_note()
    assert ReplayBackend.timing_noise({"path": str(cache(tmp_path)), "noise": "none"}) is None


def test_timing_noise_is_the_median_relative_standard_error(tmp_path):
    rec = read_cache(cache(tmp_path))
    noisy = [np.std(v, ddof=1) / np.mean(v) / np.sqrt(len(v)) for v in TIMES.values()]
    assert recorded_noise(rec) == pytest.approx(float(np.median(noisy)))
    assert ReplayBackend.timing_noise({"path": str(cache(tmp_path))}) == \
        pytest.approx(float(np.median(noisy)))


@pytest.mark.parametrize("key,value,expected", [
    ("noise", "loud", "'backend.noise': expected one of ['recorded', 'none']"),
    ("seed", -1, "'backend.seed': expected a non-negative integer"),
    ("repeats", 0, "'backend.repeats': expected runs per measurement from 1"),
])
def test_bad_noise_options_name_the_option(tmp_path, key, value, expected):
    doc = {"backend": {"name": "replay", "path": str(cache(tmp_path)), key: value}}
    with pytest.raises(SpecError) as err:
        spec_from_dict(doc, source="spec.json")
    assert expected in str(err.value) and "\n" not in str(err.value)
