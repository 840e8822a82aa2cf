"""msprof's outputs, in the formats of public files (data/README.md), read into latencies.

The device's ``OpBasicInfo.csv`` (one per launch), the simulator's Chrome traces
(no CSV at all), and the check of event timing against msprof on the same run.
"""

from __future__ import annotations

import json
import logging
import shutil
from pathlib import Path

import pytest

from aoe_optuna.backends.npu.results import (
    AGREEMENT,
    ResultFormatError,
    measurement_from_msprof,
    msprof_durations_us,
    simulator_durations_us,
    trace_bounds_us,
)

DATA = Path(__file__).resolve().parent / "data"


def events_stdout(latency_s: float) -> str:
    """The host program's result line with six samples around ``latency_s``."""
    samples = [latency_s * f for f in (1.0, 0.999, 1.001, 1.0, 0.998, 1.002)]
    return "AOE_RESULT " + json.dumps({
        "status": "ok", "mode": "npu", "soc": "Ascend910B3", "m": 1024, "k": 1024, "n": 1024,
        "block_dim": 20, "launches": 10, "warmup_batches": 2, "device": 3,
        "samples_s": samples, "checked": 4112, "bad": 0, "max_abs_err": 0.0}) + "\n"


def test_device_csv_one_row_per_launch_directory():
    assert msprof_durations_us(DATA / "msprof_npu") == [41.52, 41.38, 41.60]


def test_simulator_traces_are_one_span_per_run():
    run = DATA / "msprof_sim" / "OPPROF_20260301113833_JOEPNZFYBHYXRDUT" / "simulator"
    assert trace_bounds_us(run / "core1.cubecore0" / "trace.json") == (6.301, pytest.approx(15.2))
    # merged and per-core traces together: the kernel's first start to its last end
    assert simulator_durations_us(DATA / "msprof_sim") == [pytest.approx(8.903)]


def test_simulator_without_a_merged_trace_uses_the_cores(tmp_path):
    run = tmp_path / "OPPROF_1_A" / "simulator"
    shutil.copytree(DATA / "msprof_sim" / "OPPROF_20260301113833_JOEPNZFYBHYXRDUT" / "simulator",
                    run)
    (run / "trace.json").unlink()
    second = tmp_path / "OPPROF_2_B"
    shutil.copytree(run.parent, second)
    assert simulator_durations_us(tmp_path) == [pytest.approx(8.903)] * 2


def test_simulator_output_that_is_not_a_trace(tmp_path):
    with pytest.raises(ResultFormatError, match="wrote no trace.json"):
        simulator_durations_us(tmp_path)
    (tmp_path / "OPPROF_1_A").mkdir()
    (tmp_path / "OPPROF_1_A" / "trace.json").write_text('{"traceEvents": [{"ph": "M"}]}')
    with pytest.raises(ResultFormatError, match="no complete events"):
        simulator_durations_us(tmp_path)
    (tmp_path / "OPPROF_1_A" / "trace.json").write_text("{")
    with pytest.raises(ResultFormatError, match="unreadable trace"):
        simulator_durations_us(tmp_path)


def test_sim_measurement_reads_the_traces_not_a_csv():
    m = measurement_from_msprof(DATA / "msprof_sim", events_stdout(1e-3), cost_s=3.0,
                                run_mode="sim")
    assert m.ok and m.latency_s == pytest.approx(8.903e-6) and m.extra["timing"] == "msprof"
    assert "timing_gap" not in m.extra  # the simulator's event clock is not the device's
    npu = measurement_from_msprof(DATA / "msprof_sim", events_stdout(1e-3), 3.0, "npu")
    assert npu.failure_kind == "runtime" and "OpBasicInfo.csv" in npu.reason


def test_event_timing_agreeing_with_msprof_carries_no_warning(caplog):
    with caplog.at_level(logging.WARNING):
        m = measurement_from_msprof(DATA / "msprof_npu", events_stdout(42.0e-6), 2.0, "npu")
    assert m.ok and m.latency_s == pytest.approx(41.52e-6)
    assert m.extra["timing_gap"] < AGREEMENT and "timing_warning" not in m.extra
    assert m.extra["event_latency_s"] == pytest.approx(42.0e-6)
    assert m.extra["warmup_batches"] == 2 and m.extra["device"] == 3
    assert not caplog.records


def test_event_timing_far_from_msprof_is_a_visible_warning(caplog):
    with caplog.at_level(logging.WARNING):
        m = measurement_from_msprof(DATA / "msprof_npu", events_stdout(48.0e-6), 2.0, "npu")
    assert m.ok and m.extra["timing_gap"] == pytest.approx(48.0 / 41.52 - 1, rel=1e-3)
    assert "differ by 15.6%" in m.extra["timing_warning"]
    assert [r.getMessage() for r in caplog.records] == [m.extra["timing_warning"]]


def test_a_malformed_duration_is_one_line(tmp_path):
    (tmp_path / "OpBasicInfo.csv").write_text(
        "Op Name,Op Type,Task Duration(us),Block Dim,\ngemm_kernel,aic,N/A,20,\n")
    with pytest.raises(ResultFormatError, match=r"Task Duration\(us\) 'N/A' is not a number"):
        msprof_durations_us(tmp_path)
