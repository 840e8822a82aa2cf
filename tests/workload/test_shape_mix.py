"""The shape mix: ranges and serving logs read, bad ones refused in one line."""

from __future__ import annotations

import numpy as np
import pytest

from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.shape_mix import range_mix, read_mix, read_serving_log


def test_a_range_weights_every_value_uniformly_or_by_its_inverse():
    uniform = range_mix({"batch": {"low": 1, "high": 4}}, "--mix")
    assert uniform.dim == "batch" and uniform.values.tolist() == [1, 2, 3, 4]
    assert uniform.probabilities.tolist() == [0.25] * 4
    log = read_mix('{"seq_len": {"low": 128, "high": 8192, "weighting": "log"}}')
    assert log.dim == "seq_len" and len(log.values) == 8065
    # each doubling weighs about the same
    p = log.probabilities
    assert p[(log.values >= 128) & (log.values < 256)].sum() == pytest.approx(
        p[(log.values >= 4096) & (log.values < 8192)].sum(), rel=0.01)


@pytest.mark.parametrize(("doc", "where"), [
    ({"batch": {"low": 0, "high": 4}}, "batch.low"),
    ({"batch": {"low": 8, "high": 4}}, "batch.high"),
    ({"batch": {"low": 1, "high": 4, "weighting": "zipf"}}, "batch.weighting"),
    ({"batch": {"low": 1, "high": 4, "step": 2}}, "batch.step"),
    ({"tokens": {"low": 1, "high": 4}}, "document"),
    ([1, 2], "document"),
])
def test_a_bad_range_is_one_line_naming_the_key(doc, where):
    with pytest.raises(WorkloadFileError) as exc:
        range_mix(doc, "--mix")
    assert where in str(exc.value) and "\n" not in str(exc.value)


def test_a_serving_log_sums_counts_per_value_and_skips_comments(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("batch,count\n# a comment\n16,3\n1,10\n16,2\n8,0\n")
    mix = read_serving_log(log)
    assert mix.values.tolist() == [1, 16] and mix.weights.tolist() == [10.0, 5.0]
    assert read_mix(str(log)).values.tolist() == [1, 16]


@pytest.mark.parametrize(("text", "where"), [
    ("", "line 1"),
    ("batch,count\n", "rows"),
    ("batch,count\n4,0\n", "rows"),
    ("size,count\n4,1\n", "line 1"),
    ("batch,seq_len,count\n4,1,1\n", "line 1"),
    ("batch,count\n4,two\n", "line 2, column 'count'"),
    ("batch,count\n-4,1\n", "line 2, column 'batch'"),
    ("batch,count\n1,2\n4,1,9\n", "line 3"),
    ("batch,count\n70000,1\n", "line 2, column 'batch'"),
])
def test_an_empty_or_malformed_log_is_one_line_naming_the_line(tmp_path, text, where):
    log = tmp_path / "log.csv"
    log.write_text(text)
    with pytest.raises(WorkloadFileError) as exc:
        read_serving_log(log)
    assert where in str(exc.value) and str(log) in str(exc.value)
    assert "\n" not in str(exc.value)


def test_a_missing_log_or_bad_inline_json_is_refused(tmp_path):
    with pytest.raises(WorkloadFileError, match="no such file"):
        read_mix(str(tmp_path / "none.csv"))
    with pytest.raises(WorkloadFileError, match="--mix: text: expected a JSON object"):
        read_mix('{"batch": ')
    assert np.array_equal(read_mix('{"batch": {"low": 3, "high": 3}}').values, [3])
