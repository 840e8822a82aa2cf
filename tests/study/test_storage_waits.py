"""The waits a storage takes from the environment: read at each open, a bad value one line
naming the variable, the run refused before anything is written."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.study.storage.waits import StorageWaits, WaitSettingError, storage_waits
from tests.support.in_process import aoe_tune_here
from tests.support.refusal import refused

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")


def test_unset_or_empty_variables_keep_the_defaults() -> None:
    assert storage_waits({}) == StorageWaits()
    assert storage_waits({"AOE_HEARTBEAT_S": "", "AOE_GRPC_READY_S": " "}) == StorageWaits()
    assert StorageWaits().grace_period_s == 20  # Optuna's heartbeat grace: four beats


def test_each_variable_sets_its_wait() -> None:
    waits = storage_waits({"AOE_SQLITE_LOCK_TIMEOUT_S": "2.5", "AOE_HEARTBEAT_S": "1",
                           "AOE_JOURNAL_GRACE_S": "7", "AOE_GRPC_READY_S": "3"})
    assert waits == StorageWaits(2.5, 1, 7, 3)
    assert waits.grace_period_s == 4


@pytest.mark.parametrize(("name", "value", "expected"), [
    ("AOE_SQLITE_LOCK_TIMEOUT_S", "abc", "a number of seconds above 0 (default 60)"),
    ("AOE_SQLITE_LOCK_TIMEOUT_S", "0", "a number of seconds above 0 (default 60)"),
    ("AOE_SQLITE_LOCK_TIMEOUT_S", "inf", "a number of seconds above 0 (default 60)"),
    ("AOE_HEARTBEAT_S", "1.5", "a whole number of seconds above 0 (default 5)"),
    ("AOE_HEARTBEAT_S", "0", "a whole number of seconds above 0 (default 5)"),
    ("AOE_JOURNAL_GRACE_S", "-3", "a whole number of seconds above 0 (default 30)"),
    ("AOE_GRPC_READY_S", "\u00b2", "a whole number of seconds above 0 (default 10)"),
])
def test_a_bad_value_names_the_variable_and_what_was_expected(name: str, value: str,
                                                              expected: str) -> None:
    with pytest.raises(WaitSettingError) as caught:
        storage_waits({name: value})
    assert str(caught.value) == f"{name}={value!r}: expected {expected}"


@pytest.mark.parametrize("storage", ["sqlite:///aoe.db", "aoe.log"])
def test_a_run_with_a_bad_wait_is_refused_in_one_line_writing_nothing(
        tmp_path: Path, storage: str) -> None:
    run = aoe_tune_here(["--config", QWEN, "--storage", storage, "--n-trials", "2",
                         "--no-progress"], tmp_path, {"AOE_HEARTBEAT_S": "soon"})
    refused(run, "AOE_HEARTBEAT_S='soon': expected a whole number of seconds above 0")
    assert list(tmp_path.iterdir()) == []
