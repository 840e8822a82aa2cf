"""Temporary files of writes killed midway are removed by the next write (real SIGKILL)."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from aoe_optuna.atomic_write import write_atomic

WRITER = """
import sys
from aoe_optuna.atomic_write import write_atomic
big = "x" * (64 << 20)
while True:
    write_atomic(sys.argv[1], big)
"""


def _temps(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith(".tmp"))


def test_a_killed_writers_temp_file_is_removed_by_the_next_write(tmp_path: Path) -> None:
    target = tmp_path / "kb.json"
    proc = subprocess.Popen([sys.executable, "-c", WRITER, str(target)], env=os.environ.copy())
    deadline = time.monotonic() + 60
    while not _temps(tmp_path):  # kill it while a temporary file exists
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    assert _temps(tmp_path), "the killed write left no temporary file to clean"

    write_atomic(target, "{}")

    assert _temps(tmp_path) == []
    assert target.read_text() == "{}"


def test_a_live_writers_temp_file_is_left_alone(tmp_path: Path) -> None:
    target = tmp_path / "kb.json"
    sleeper = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        host = re.sub(r"[^A-Za-z0-9_-]", "_", socket.gethostname())
        live = tmp_path / f".kb.json.{host}.{sleeper.pid}.abc123.tmp"
        live.write_text("in progress")
        write_atomic(target, "{}")
        assert live.exists()
    finally:
        sleeper.kill()
        sleeper.wait()
