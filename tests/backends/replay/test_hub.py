"""benchmark_hub:NAME: a pinned download into the spaces folder, a one-line error offline."""

from __future__ import annotations

import functools
import hashlib
import shutil
import socket
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from aoe_optuna.backends.replay.hub import HUB_COMMIT, HUB_FILES, HubError, recorded_space
from aoe_optuna.cli.main import main

SHARED = Path(__file__).resolve().parents[4] / "shared" / "spaces"
NAME = "convolution_milo_A4000"  # the smallest of the four (1 MB)
needs_copies = pytest.mark.skipif(not (SHARED / f"{NAME}.json.gz").is_file(),
                                  reason="../shared/spaces absent")


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def mirror(tmp_path: Path) -> Iterator[tuple[str, Path]]:
    """A local HTTP mirror of raw.githubusercontent.com/.../benchmark_hub: (url, its root)."""
    root = tmp_path / "mirror"
    root.mkdir()
    server = ThreadingHTTPServer(("127.0.0.1", 0),
                                 functools.partial(_Quiet, directory=str(root)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}", root
    server.shutdown()
    server.server_close()


def _serve(root: Path, name: str, data: bytes) -> None:
    target = root / HUB_COMMIT / HUB_FILES[name].path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(data)


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@needs_copies
@pytest.mark.parametrize("name", list(HUB_FILES))
def test_the_pinned_checksums_are_the_local_copies(name: str) -> None:
    data = (SHARED / f"{name}.json.gz").read_bytes()
    assert hashlib.sha256(data).hexdigest() == HUB_FILES[name].sha256
    assert len(data) == HUB_FILES[name].size


@needs_copies
def test_downloaded_once_checked_and_cached(mirror: tuple[str, Path], tmp_path: Path,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    url, root = mirror
    _serve(root, NAME, (SHARED / f"{NAME}.json.gz").read_bytes())
    cache = tmp_path / "cache"
    monkeypatch.setenv("AOE_SPACES_DIR", str(cache))
    monkeypatch.setenv("AOE_BENCHMARK_HUB_URL", url)
    got = recorded_space(f"benchmark_hub:{NAME}")
    assert got == cache / f"{NAME}.json.gz"
    assert got.read_bytes() == (SHARED / f"{NAME}.json.gz").read_bytes()
    shutil.rmtree(root / HUB_COMMIT)  # the mirror is gone: the cached file is used
    assert recorded_space(f"benchmark_hub:{NAME}.json.gz") == got
    assert sorted(p.name for p in cache.iterdir()) == [f"{NAME}.json.gz"]


def test_a_download_that_is_not_the_pinned_file_is_refused(
    mirror: tuple[str, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    url, root = mirror
    _serve(root, NAME, b"not the recorded space")
    cache = tmp_path / "cache"
    monkeypatch.setenv("AOE_SPACES_DIR", str(cache))
    monkeypatch.setenv("AOE_BENCHMARK_HUB_URL", url)
    with pytest.raises(HubError, match="not the pinned file"):
        recorded_space(f"benchmark_hub:{NAME}")
    assert not list(cache.iterdir())


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(HubError, match="gemm_RTX_2080_Ti"):
        recorded_space("benchmark_hub:gemm_H100")


def test_offline_bench_is_one_line_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    pytest.importorskip("matplotlib")
    monkeypatch.setenv("AOE_SPACES_DIR", str(tmp_path / "cache"))
    monkeypatch.setenv("AOE_BENCHMARK_HUB_URL", f"http://127.0.0.1:{_closed_port()}")
    out = tmp_path / "out"
    assert main(["bench", "--space", f"benchmark_hub:{NAME}", "--sampler", "random",
                 "--seeds", "1", "--budgets", "5", "--out", str(out)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "cannot download" in err and "offline?" in err
    assert not out.exists() and not list((tmp_path / "cache").iterdir())
