"""The knowledge base as a store many processes update at once: real processes started
together all land their entries, a killed lock holder blocks nobody, a stuck one ends in
a TimeoutError naming it, and the lock file is not left behind."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_entry import KBError, make_entry
from aoe_optuna.export.kb_store import lock_path, update_knowledge_base

# One writer: waits for the start file, then adds its entries one update at a time.
WRITER = """
import sys, time
from pathlib import Path
from aoe_optuna.export.kb_entry import make_entry
from aoe_optuna.export.kb_store import update_knowledge_base
kb, start, who, count = sys.argv[1], Path(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
entries = [make_entry("Ascend910B2", "GemmKernel", "fp16", 16 * (who + 1), 16 * (i + 1), 64,
                      "row_major", {"tile_m": 16}, 1.0, None, f"study-{who}", None)
           for i in range(count)]
print("ready", flush=True)
while not start.exists():
    time.sleep(0.001)
for e in entries:
    update_knowledge_base(kb, lambda base: base.merge(e))
"""

# Holds the lock until killed; says when it holds it.
HOLDER = """
import sys, time
from aoe_optuna.export.kb_store import knowledge_base_lock
with knowledge_base_lock(sys.argv[1]):
    print("holding", flush=True)
    time.sleep(600)
"""


def entry(m: int, study: str = "s", value: float = 1.0) -> dict:
    return make_entry("Ascend910B2", "GemmKernel", "fp16", m, 64, 64, "row_major",
                      {"tile_m": 16}, value, None, study, None)


def _spawn(script: str, *args: object) -> subprocess.Popen[str]:
    return subprocess.Popen([sys.executable, "-c", script, *map(str, args)],
                            stdout=subprocess.PIPE, text=True)


@pytest.mark.slow  # 3 processes x 2 rounds
def test_writers_started_together_keep_every_entry(tmp_path: Path) -> None:
    # without the lock, 4 such writers lost entries in 5 rounds of 5 (115 of 160 lost)
    writers, per_writer = 3, 8
    for round_ in range(2):
        kb, start = tmp_path / f"kb{round_}.json", tmp_path / f"start{round_}"
        procs = [_spawn(WRITER, kb, start, who, per_writer) for who in range(writers)]
        for p in procs:  # all imported and waiting: the updates meet
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        start.touch()
        assert [p.wait(timeout=120) for p in procs] == [0] * writers
        held = KnowledgeBase.load(kb)
        assert len(held) == writers * per_writer, f"round {round_}: {len(held)} kept"
        assert {e["study"] for e in held} == {f"study-{w}" for w in range(writers)}
        assert sorted(p.name for p in tmp_path.iterdir() if p.name.startswith(".")) == []


def test_an_update_leaves_no_lock_file_and_writes_the_header(tmp_path: Path) -> None:
    kb = tmp_path / "kb.json"
    outcome = update_knowledge_base(kb, lambda base: base.merge(entry(16)).outcome,
                                    header=tmp_path / "kb.h")
    assert outcome == "added"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.h", "kb.json"]
    assert "aoe_kb_lookup" in (tmp_path / "kb.h").read_text()


def test_a_failed_change_writes_nothing(tmp_path: Path) -> None:
    kb = tmp_path / "kb.json"
    update_knowledge_base(kb, lambda base: base.merge(entry(16)))
    before = kb.read_text()
    other = make_entry("Ascend910B2", "GemmKernel", "fp16", 16, 64, 64, "row_major",
                       {"tile_m": 16}, 9.0, None, "t", None, objective="TFLOPS")
    with pytest.raises(KBError, match=f"^{kb}: .*another unit, not comparable"):
        update_knowledge_base(kb, lambda base: base.merge(other))
    assert kb.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.json"]


def test_a_killed_lock_holder_blocks_nobody(tmp_path: Path) -> None:
    kb = tmp_path / "kb.json"
    holder = _spawn(HOLDER, kb)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        assert lock_path(kb).exists()
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait()
    began = time.monotonic()
    update_knowledge_base(kb, lambda base: base.merge(entry(32)), timeout_s=30)
    assert time.monotonic() - began < 5
    assert len(KnowledgeBase.load(kb)) == 1
    assert not lock_path(kb).exists()  # the killed holder's file, removed by the next update


def test_a_stuck_lock_holder_is_named_after_the_timeout(tmp_path: Path) -> None:
    kb = tmp_path / "kb.json"
    holder = _spawn(HOLDER, kb)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "holding"
        with pytest.raises(TimeoutError, match=rf"pid {holder.pid}\) has held"):
            update_knowledge_base(kb, lambda base: base.merge(entry(32)), timeout_s=0.3)
    finally:
        holder.kill()
        holder.wait()
    assert not kb.exists()


def test_links_to_one_knowledge_base_share_its_lock(tmp_path: Path) -> None:
    (tmp_path / "store").mkdir()
    target = tmp_path / "store" / "kb.json"
    (tmp_path / "kb.json").symlink_to(target)
    assert lock_path(tmp_path / "kb.json") == lock_path(target) == (
        tmp_path / "store" / ".kb.json.lock")
    update_knowledge_base(tmp_path / "kb.json", lambda base: base.merge(entry(16)))
    assert (tmp_path / "kb.json").is_symlink()
    assert json.loads(target.read_text())["entries"][0]["M"] == 16
    assert os.listdir(tmp_path / "store") == ["kb.json"]
