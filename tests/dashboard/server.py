"""The real optuna-dashboard server on a free loopback port, for the dashboard tests."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

BIN = Path(sys.executable).parent
START_TIMEOUT_S = 60


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get_json(url: str) -> dict:
    with urllib.request.urlopen(url, timeout=5) as r:
        return json.loads(r.read())


@contextmanager
def dashboard_server(storage_url: str, artifact_dir: Path) -> Iterator[str]:
    """``optuna-dashboard`` serving ``storage_url``; yields its base URL once it answers."""
    port = free_port()
    server = subprocess.Popen(
        [str(BIN / "optuna-dashboard"), storage_url, "--host", "127.0.0.1",
         "--port", str(port), "--artifact-dir", str(artifact_dir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while True:
            try:
                get_json(f"{base}/api/studies")
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("optuna-dashboard did not start") from None
                time.sleep(0.3)
        yield base
    finally:
        server.terminate()
        server.wait(timeout=10)


def study_id(base: str, name: str) -> int:
    (entry,) = [s for s in get_json(f"{base}/api/studies")["study_summaries"]
                if s["study_name"] == name]
    return int(entry["study_id"])
