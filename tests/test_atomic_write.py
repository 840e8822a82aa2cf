"""Temporary files of writes killed midway are removed by the next write (real SIGKILL);
a write goes through symlinks to their target, keeps the file's mode and owner, and
refuses what is not a regular file (FIFO, socket, device node, folder, /proc, /sys)."""

from __future__ import annotations

import os
import re
import signal
import socket
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoe_optuna.atomic_write import (
    SpecialFileError,
    write_atomic,
    write_error_text,
    write_target,
)

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


# ------------------------------------------------------------------- where a write lands
def _leftovers(*folders: Path) -> list[str]:
    return sorted(p.name for f in folders for p in f.iterdir() if p.name.endswith(".tmp"))


def test_a_symlink_stays_a_link_and_its_target_gets_the_content(tmp_path: Path) -> None:
    real_dir, link_dir = tmp_path / "real", tmp_path / "links"
    real_dir.mkdir()
    link_dir.mkdir()
    target = real_dir / "kernel.cpp"
    target.write_text("old")
    link = link_dir / "kernel.cpp"
    link.symlink_to(target)

    write_atomic(link, "new")

    assert link.is_symlink() and os.readlink(link) == str(target)
    assert target.read_text() == "new"
    assert _leftovers(real_dir, link_dir) == []


def test_a_dangling_symlink_gets_its_target_made(tmp_path: Path) -> None:
    link = tmp_path / "kb.json"
    link.symlink_to("store/kb.json")  # relative, as ln -s makes them
    (tmp_path / "store").mkdir()

    write_atomic(link, "{}")

    assert link.is_symlink() and (tmp_path / "store" / "kb.json").read_text() == "{}"


def test_a_chain_of_links_updates_the_last_target(tmp_path: Path) -> None:
    target = tmp_path / "a.h"
    target.write_text("old")
    (tmp_path / "b.h").symlink_to(target)
    (tmp_path / "c.h").symlink_to(tmp_path / "b.h")

    write_atomic(tmp_path / "c.h", "new")

    assert target.read_text() == "new" and (tmp_path / "c.h").is_symlink()
    assert (tmp_path / "b.h").is_symlink()


def test_the_files_mode_is_kept_through_a_link_too(tmp_path: Path) -> None:
    target = tmp_path / "kb.json"
    target.write_text("{}")
    target.chmod(0o640)
    (tmp_path / "link.json").symlink_to(target)

    write_atomic(target, "[]")
    assert target.stat().st_mode & 0o777 == 0o640
    write_atomic(tmp_path / "link.json", "[1]")
    assert target.stat().st_mode & 0o777 == 0o640 and target.read_text() == "[1]"


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a file to another user needs root")
def test_root_keeps_the_files_owner(tmp_path: Path) -> None:
    target = tmp_path / "kb.json"
    target.write_text("{}")
    os.chown(target, 4321, 4322)

    write_atomic(target, "[]")

    st = target.stat()
    assert (st.st_uid, st.st_gid) == (4321, 4322) and target.read_text() == "[]"


def _unix_socket(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(path))
    return sock


@pytest.mark.parametrize("kind", ["fifo", "socket", "folder", "char device"])
def test_what_is_not_a_regular_file_is_refused_and_left_as_it_was(tmp_path: Path,
                                                                  kind: str) -> None:
    path = tmp_path / "out"
    sock = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = _unix_socket(path)
    elif kind == "folder":
        path.mkdir()
    else:
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    mode = path.stat().st_mode
    link = tmp_path / "link"
    link.symlink_to(path)
    try:
        for where in (path, link):
            with pytest.raises(OSError) as raised:
                write_atomic(where, "x")
            expected = {"fifo": "a FIFO", "socket": "a socket", "folder": "is a folder",
                        "char device": "a character device"}[kind]
            assert expected in str(raised.value) and str(where) in str(raised.value)
        assert path.stat().st_mode == mode and link.is_symlink()
        assert _leftovers(tmp_path) == []
    finally:
        if sock is not None:
            sock.close()


@pytest.mark.parametrize("path", ["/proc/kb.json", "/sys/kb.json", "/proc/self/fd/1",
                                  "/proc/self/comm"])
def test_the_kernels_files_are_refused(path: str) -> None:
    with pytest.raises(SpecialFileError, match="/proc or /sys"):
        write_atomic(path, "x")


def test_a_link_into_proc_is_refused(tmp_path: Path) -> None:
    (tmp_path / "kb.json").symlink_to("/proc/self/comm")
    with pytest.raises(SpecialFileError, match="a link to /proc/"):
        write_target(tmp_path / "kb.json")


def test_a_failed_write_names_the_file_not_its_temporary_file(tmp_path: Path) -> None:
    missing = tmp_path / "gone" / "kb.json"
    with pytest.raises(FileNotFoundError) as raised:
        write_atomic(missing, "{}")
    assert raised.value.filename == str(missing)
    assert write_error_text(raised.value) == f"{missing}: No such file or directory"
