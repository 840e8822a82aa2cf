"""Output paths checked as the final write will meet them, before any measurement:
symlinks followed, device nodes, FIFOs, sockets and /proc, /sys refused, and a folder
that must really take a new file; a check leaves nothing behind."""

from __future__ import annotations

import os
import socket
import stat
from pathlib import Path

import pytest

from aoe_optuna.export.destinations import (
    DestinationError,
    check_knowledge_base,
    check_output_file,
    check_output_folder,
)


def _listing(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


def test_links_to_a_file_and_dangling_links_are_accepted(tmp_path: Path) -> None:
    (tmp_path / "real.cpp").write_text("x")
    (tmp_path / "to_file.cpp").symlink_to(tmp_path / "real.cpp")
    (tmp_path / "dangling.json").symlink_to(tmp_path / "new.json")
    before = _listing(tmp_path)
    check_output_file(tmp_path / "to_file.cpp", "--output")
    check_knowledge_base(tmp_path / "dangling.json")
    assert _listing(tmp_path) == before  # the folder probe removed its file


def test_a_dangling_link_into_a_missing_folder_names_that_folder(tmp_path: Path) -> None:
    (tmp_path / "kb.json").symlink_to(tmp_path / "gone" / "kb.json")
    with pytest.raises(DestinationError, match=f"folder {tmp_path}/gone does not exist"):
        check_knowledge_base(tmp_path / "kb.json")


@pytest.mark.parametrize("kind,expected", [
    ("fifo", "a FIFO"),
    ("socket", "a socket"),
    ("char device", "a character device"),
    ("link to /dev/full", "(a link to /dev/full): a character device"),
    ("link loop", "Too many levels of symbolic links"),
])
def test_what_a_write_must_not_replace_is_refused(tmp_path: Path, kind: str,
                                                  expected: str) -> None:
    path = tmp_path / "out.h"
    sock = None
    if kind == "fifo":
        os.mkfifo(path)
    elif kind == "socket":
        sock = socket.socket(socket.AF_UNIX)
        sock.bind(str(path))
    elif kind == "char device":
        if os.geteuid() != 0:
            pytest.skip("making a device node needs root")
        os.mknod(path, 0o666 | stat.S_IFCHR, os.stat("/dev/null").st_rdev)
    elif kind == "link to /dev/full":
        path.symlink_to("/dev/full")
    else:
        path.symlink_to(tmp_path / "other.h")
        (tmp_path / "other.h").symlink_to(path)
    before = _listing(tmp_path)
    try:
        with pytest.raises(DestinationError, match="--header: ") as raised:
            check_output_file(path, "--header")
        assert expected in str(raised.value) and "\n" not in str(raised.value)
        assert _listing(tmp_path) == before
    finally:
        if sock is not None:
            sock.close()


@pytest.mark.parametrize("path", ["/dev/full", "/dev/null", "/proc/kb.json", "/proc/self/fd/2",
                                  "/sys/kernel/kb.json"])
def test_system_paths_are_refused(path: str) -> None:
    with pytest.raises(DestinationError, match="not a regular file|/proc or /sys"):
        check_knowledge_base(path)


@pytest.mark.parametrize("path", ["/proc/kernels", "/sys/kernels", "/proc/self"])
def test_an_export_folder_in_proc_or_sys_is_refused(path: str) -> None:
    with pytest.raises(DestinationError, match="/proc or /sys"):
        check_output_folder(path, "--export-dir")


def test_a_missing_export_folder_is_checked_where_it_would_be_made(tmp_path: Path) -> None:
    check_output_folder(tmp_path / "a" / "b", "--export-dir")
    assert _listing(tmp_path) == []
    (tmp_path / "file").write_text("x")
    with pytest.raises(DestinationError, match="is not a folder"):
        check_output_folder(tmp_path / "file", "--export-dir")
    with pytest.raises(DestinationError, match="is not a writable folder"):
        check_output_folder(tmp_path / "file" / "sub", "--export-dir")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into a read-only folder")
def test_a_folder_without_write_permission_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "ro"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        with pytest.raises(DestinationError, match="is not writable"):
            check_output_file(folder / "kb.json", "--kb")
        with pytest.raises(DestinationError, match="is not writable"):
            check_output_folder(folder / "kernels", "--export-dir")
    finally:
        folder.chmod(0o755)
