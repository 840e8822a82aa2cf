"""A storage write failing in a background thread (Optuna's heartbeat on a full disk)
is one line on stderr, not a thread's traceback; other thread errors go on to the hook
that was there before."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from sqlalchemy.exc import OperationalError

from aoe_optuna.study.storage.opening import open_storage


def _raise_in_thread(exc: BaseException) -> None:
    def target() -> None:
        raise exc

    thread = threading.Thread(target=target, name="heartbeat")
    thread.start()
    thread.join()


def test_a_failed_background_write_is_one_line(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    before: list[BaseException | None] = []
    monkeypatch.setattr(threading, "excepthook", lambda args: before.append(args.exc_value))
    open_storage(f"sqlite:///{tmp_path / 'a.db'}")
    _raise_in_thread(OperationalError("COMMIT", {}, Exception("disk I/O error")))
    err = capsys.readouterr().err
    assert "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert err.startswith("warning: a write in the background (heartbeat) failed: storage")
    assert "disk I/O error (is the disk full?" in err and before == []
    other = ValueError("not a storage error")
    _raise_in_thread(other)
    assert before == [other] and "warning" not in capsys.readouterr().err
