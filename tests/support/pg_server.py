"""A throwaway PostgreSQL server on loopback, for the many-hosts tests and reliability runs.

It uses the server binaries of the machine (Debian's postgresql package, which
.ci/run installs); initdb refuses to run as root, so as root the cluster is
made and run as the ``postgres`` user. The cluster lives in a temp folder and
is stopped and removed at the end.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path


def server_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _as_server_user(argv: list[str]) -> list[str]:
    if os.geteuid() == 0:
        return ["runuser", "-u", "postgres", "--", *argv]
    return argv


@contextmanager
def postgres_server() -> Iterator[str]:
    """Yield an SQLAlchemy URL of a fresh database on a private server."""
    bindir = server_bin()
    if bindir is None:
        raise RuntimeError("no PostgreSQL server binaries (initdb) found")
    root = Path(tempfile.mkdtemp(prefix="aoe-pg-"))
    data, sock = root / "data", root / "sock"
    sock.mkdir()
    if os.geteuid() == 0:
        shutil.chown(root, "postgres")
        shutil.chown(sock, "postgres")
    port = _free_port()
    run = {"check": True, "capture_output": True, "timeout": 120}
    subprocess.run(_as_server_user([str(bindir / "initdb"), "-D", str(data), "-A", "trust",
                                    "-U", "postgres", "--no-sync"]), **run)
    opts = f"-p {port} -k {sock} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=100"
    subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-o", opts, "-w",
                                    "-l", str(root / "server.log"), "start"]), **run)
    try:
        subprocess.run([str(bindir / "createdb"), "-h", "127.0.0.1", "-p", str(port),
                        "-U", "postgres", "aoe"], **run)
        yield f"postgresql+psycopg://postgres@127.0.0.1:{port}/aoe"
    finally:
        subprocess.run(_as_server_user([str(bindir / "pg_ctl"), "-D", str(data), "-m", "fast",
                                        "-w", "stop"]), capture_output=True, timeout=120)
        shutil.rmtree(root, ignore_errors=True)
