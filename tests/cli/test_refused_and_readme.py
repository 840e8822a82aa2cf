"""Refused runs leave no file behind; URLs print without passwords; the README runs in order."""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.study.storage.redact import redact_url
from tests.support.in_process import aoe_tune_here

ROOT = Path(__file__).resolve().parents[2]
QWEN = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
BIN = Path(sys.executable).parent


@pytest.mark.parametrize("args", [
    ["--config", QWEN, "--sampler-kwargs", '{"no_such_option": 1}'],  # the sampler rejects it
    ["--study-name", "never-created"],  # resuming a study that does not exist
])
def test_a_refused_run_leaves_no_storage_or_wal_file(
    tmp_path: Path, monkeypatch, capsys, args: list[str]
) -> None:
    monkeypatch.chdir(tmp_path)  # the default storage, sqlite:///aoe.db, lands here
    assert main([*args, "--n-trials", "3", "--no-progress"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("aoe-tune: error:") and len(err.splitlines()) == 1, err
    assert sorted(p.name for p in tmp_path.iterdir()) == []


@pytest.mark.parametrize("url,shown", [
    ("postgresql+psycopg://u:secret@db:5432/aoe", "postgresql+psycopg://u:***@db:5432/aoe"),
    ("postgresql://u@db/aoe?x=a@b", "postgresql://u@db/aoe?x=a@b"),  # a query, not a password
    ("postgresql://u:p%40ss@db/aoe?x=a@b", "postgresql://u:***@db/aoe?x=a@b"),
    ("mysql://u:secret@db/aoe", "mysql://u:***@db/aoe"),
    ("sqlite:///aoe.db", "sqlite:///aoe.db"),
    ("runs/aoe.log", "runs/aoe.log"),
])
def test_redaction_parses_the_url(url: str, shown: str) -> None:
    assert redact_url(url) == shown
    assert "secret" not in redact_url(url)


def test_the_knowledge_base_redacts_with_the_same_helper() -> None:
    from aoe_optuna.export import kb_entry

    assert not hasattr(kb_entry, "redact_storage")
    assert kb_entry.redact_url is redact_url


README_COMMANDS = [  # the README's commands, in its order (storage: sqlite:///aoe.db)
    ".venv/bin/aoe-tune --config studies/qwen25_7b_decode_catlass_910b2.json --n-trials 100",
    "optuna create-study --storage sqlite:///aoe.db --study-name qwen-decode --direction maximize",
    "aoe-tune --config studies/qwen25_7b_decode_910b2.json --storage sqlite:///aoe.db "
    "--study-name qwen-decode --n-trials 100",
    "aoe-tune --storage sqlite:///aoe.db --study-name qwen-decode --n-trials 100",
    "optuna best-trial --storage sqlite:///aoe.db --study-name qwen-decode",
    "aoe-tune --config studies/aoe_config.json --output optimized_kernel.cpp",
]


@pytest.mark.slow  # six commands: Optuna's CLI as processes, aoe-tune's main here
def test_the_readme_commands_run_in_its_order(tmp_path: Path) -> None:
    readme = " ".join((ROOT / "README.md").read_text().replace("\\\n", " ").split())
    readme = readme.replace("`", "")
    for command in README_COMMANDS:
        assert command in readme, f"the README no longer has: {command}"
    for command in README_COMMANDS:
        argv = shlex.split(command)
        # fewer measurements and the quick sampler: the order is what is tested
        argv = [re.sub(r"^100$", "3", a) for a in argv]
        argv = [str(ROOT / a) if a.startswith("studies/") else a for a in argv]
        if argv[0].endswith("aoe-tune"):
            proc = aoe_tune_here([*argv[1:], "--no-progress", "--sampler", "random"], tmp_path)
        else:
            proc = subprocess.run([str(BIN / argv[0]), *argv[1:]], cwd=tmp_path,
                                  capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, f"{command}: {proc.stderr[-2000:]}"
    assert (tmp_path / "optimized_kernel.cpp").exists()
