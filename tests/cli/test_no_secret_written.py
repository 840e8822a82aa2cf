"""A password in a PostgreSQL storage URL, in either of libpq's forms, reaches no output:
not the terminal, the dashboard note, the database, the knowledge base, the header or
the kernels that runs and exports write."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest
from sqlalchemy.engine import make_url

from aoe_optuna.cli.main import main
from tests.support.pg_server import postgres_server, server_bin
from tests.support.run_banner import joined_lines

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")
SECRET = "S3CRETpw"


def _run(argv: list[str], cwd: Path, log: Path) -> None:
    """Run aoe-tune; its stdout and stderr are kept in ``log`` (grepped with the rest)."""
    done = subprocess.run([AOE_TUNE, *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=300)
    log.write_text(done.stdout + done.stderr)
    assert done.returncode == 0 and "Traceback" not in done.stderr, done.stderr[-2000:]


def _dump(url: str, out: Path) -> None:
    """The whole database as SQL text: study and trial attributes, the dashboard note."""
    u = make_url(url)
    bindir = server_bin()
    assert bindir is not None
    subprocess.run([str(bindir / "pg_dump"), "-h", str(u.host), "-p", str(u.port), "-U",
                    str(u.username), "-f", str(out), str(u.database)], check=True, timeout=120)


def _files_holding(folder: Path, text: str) -> list[str]:
    return [str(p) for p in sorted(folder.rglob("*"))
            if p.is_file() and text.encode() in p.read_bytes()]


FORMS = {  # libpq's two forms; the query one after another option, with sslpassword
    "query": ("{url}?application_name=aoe&password=SECRET&sslpassword=SECRET2",
              "application_name=aoe&password=***&sslpassword=***"),
    "user": ("{user}:SECRET@{rest}", "postgres:***@"),
}


@pytest.mark.slow  # a real PostgreSQL server, three aoe-tune commands per form
@pytest.mark.skipif(server_bin() is None, reason="no PostgreSQL server binaries (Debian's "
                    "postgresql package)")
def test_no_file_or_line_written_holds_the_password(tmp_path: Path) -> None:
    gemm = tmp_path / "gemm.json"
    gemm.write_text(json.dumps({"workload": {"gemm": {"M": 64, "K": 256, "N": 128}}}))
    with postgres_server() as url:  # trust auth: any password given is accepted
        user, rest = url.split("@", 1)
        for form, (template, _) in FORMS.items():
            secret_url = template.format(url=url, user=user, rest=rest).replace("SECRET",
                                                                                 SECRET)
            _run_and_export(secret_url, form, gemm, tmp_path / form)
        _dump(url, tmp_path / "db.sql")
    for form, (_, masked) in FORMS.items():
        _check_masked_where_shown(tmp_path / form, form, masked)
        assert masked in (tmp_path / "db.sql").read_text(), form  # the dashboard notes
    written = sorted(str(p.relative_to(tmp_path)) for p in tmp_path.rglob("*") if p.is_file())
    assert len(written) >= 2 * 9 + 2, written  # logs, KBs, header, kernels; spec, dump
    assert _files_holding(tmp_path, SECRET) == []


def _run_and_export(secret_url: str, form: str, gemm: Path, folder: Path) -> None:
    """A run with two workers exporting at its end, an export, an operators run."""
    folder.mkdir()
    _run(["--config", QWEN, "--storage", secret_url, "--study-name", form, "--n-trials", "4",
          "--sampler", "random", "--n-workers", "2", "--kb", "run_kb.json", "--output",
          "run_kernel.cpp", "--no-progress"], folder, folder / "run.log")
    _run(["export", "--storage", secret_url, "--study-name", form, "--kb", "kb.json",
          "--header", "kb.h", "--output", "kernel.cpp"], folder, folder / "export.log")
    _run(["operators", "--config", str(gemm), "--storage", secret_url, "--study-name",
          f"ops-{form}", "--n-trials", "6", "--sampler", "random", "--kb", "ops_kb.json",
          "--export-dir", "kernels"], folder, folder / "ops.log")


def _check_masked_where_shown(folder: Path, form: str, masked: str) -> None:
    """The URL is shown, masked: in the header, the next steps, each KB entry, the kernel."""
    run = (folder / "run.log").read_text()
    header = [line for line in joined_lines(run) if line.startswith(f"study {form} in ")]
    assert len(header) == 1 and masked in header[0], run
    assert run.count(masked) >= 3, run  # the header and the two next: commands
    assert masked in (folder / "ops.log").read_text()
    for kb in ("run_kb.json", "kb.json", "ops_kb.json"):
        entries = json.loads((folder / kb).read_text())["entries"]
        assert entries and all(masked in e["storage"] for e in entries), kb
    for kernel in ("run_kernel.cpp", "kernel.cpp", *(f"kernels/{p.name}" for p in
                                                      (folder / "kernels").iterdir())):
        assert masked in (folder / kernel).read_text(), kernel


@pytest.mark.parametrize("url", [
    f"postgresql+psycopg://u@127.0.0.1:9/aoe?password={SECRET}",
    f"postgresql+psycopg://u@127.0.0.1:9/aoe?connect_timeout=3&PASSWORD={SECRET}",
    f"postgresql+psycopg://u:{SECRET}@127.0.0.1:9/aoe?sslpassword={SECRET}",
])
def test_an_unreachable_server_is_one_line_without_the_password(tmp_path: Path, monkeypatch,
                                                                capsys, url: str) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["--config", QWEN, "--storage", url, "--n-trials", "1", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "127.0.0.1:9/aoe" in err, err
    assert SECRET not in err and "***" in err, err
