"""Two runs that start one new study together with different specs: the first writer's
spec is the study's; the other run is refused in one line and measures nothing.

Real storages (SQLite and Journal files, a private PostgreSQL server, Optuna's gRPC
proxy in front of an SQLite file) and real ``aoe-tune`` processes. The specs are the
simulator study at batch 1 and at batch 8 (the issue's "batch 1 and batch 8").
"""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import optuna
import pytest

from aoe_optuna.attrs import SPEC_ATTR, WORKER_ATTR
from aoe_optuna.spec.loader import StudySpec, load_spec, spec_from_dict
from aoe_optuna.study.create import StudyError
from aoe_optuna.study.run.objective import count_measured
from aoe_optuna.study.session import SamplerRequest, StudySession
from aoe_optuna.study.storage.opening import open_storage
from aoe_optuna.study.storage.write_once import WRITE_ONCE_KEYS
from tests.study.stopped import wait_stopped
from tests.support.pg_server import postgres_server, server_bin

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"  # simulator: measurements are instant
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
ROUNDS = 4

_slow = pytest.mark.slow
_needs_pg = pytest.mark.skipif(server_bin() is None, reason="no PostgreSQL server binaries")
STORAGES = ["sqlite", "journal",
            pytest.param("postgresql", marks=[_slow, _needs_pg]),
            pytest.param("grpc", marks=_slow)]


def _spec(batch: int, **top: object) -> StudySpec:
    doc = load_spec(SPEC).canonical()
    doc["workload"]["batch"] = batch
    doc.update(top)
    return spec_from_dict(doc, source=f"batch{batch}.json")


@contextmanager
def _storage(kind: str, tmp_path: Path) -> Iterator[tuple[str, str]]:
    """(the URL runs get, the URL this test reads back) of a fresh storage of ``kind``."""
    if kind == "sqlite":
        url = f"sqlite:///{tmp_path / 's.db'}"
        yield url, url
    elif kind == "journal":
        path = str(tmp_path / "s.log")
        yield path, path
    elif kind == "postgresql":
        with postgres_server() as url:
            yield url, url
    else:
        pytest.importorskip("grpc", reason="grpcio not installed (pip install grpcio protobuf)")
        behind = f"sqlite:///{tmp_path / 'behind-proxy.db'}"
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        proxy = subprocess.Popen(
            [sys.executable, "-m", "aoe_optuna.study.storage.grpc_proxy", behind, str(port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            yield f"grpc://127.0.0.1:{port}", behind
        finally:
            proxy.terminate()
            proxy.wait(timeout=30)


def _study(url: str, name: str) -> optuna.Study:
    return optuna.load_study(study_name=name, storage=open_storage(url))


@pytest.mark.parametrize("kind", ["sqlite", "journal"])
def test_a_later_write_of_the_spec_keeps_the_first(kind: str, tmp_path: Path) -> None:
    """Two handles on one storage write the spec (an operator plan, a kernel study's
    problem) in turn: the first value stays for both and for a new reader; an ordinary
    attribute is still last-writer-wins."""
    with _storage(kind, tmp_path) as (url, _):
        first, second = open_storage(url), open_storage(url)
        study_id = optuna.create_study(storage=first, study_name="s")._study_id
        for key in WRITE_ONCE_KEYS:
            first.set_study_user_attr(study_id, key, {"batch": 1})
            second.set_study_user_attr(study_id, key, {"batch": 8})
        second.set_study_user_attr(study_id, "note", "a")
        first.set_study_user_attr(study_id, "note", "b")
        want = {**{key: {"batch": 1} for key in WRITE_ONCE_KEYS}, "note": "b"}
        for handle in (first, second, open_storage(url)):
            assert handle.get_study_user_attrs(study_id) == want
    if kind == "journal":
        assert (tmp_path / "s.log").read_text().count('"batch":8') == 0, \
            "a second record of a write-once key was appended"


@pytest.mark.parametrize("kind", STORAGES)
def test_two_specs_started_together_on_one_new_study(kind: str, tmp_path: Path) -> None:
    """Each round, two runs (threads released by a barrier) open one new study with the
    batch-1 and batch-8 specs: exactly one is accepted, the other is refused naming the
    difference, the stored spec is the winner's, and only the winner's baseline waits.
    Every other round the study was made beforehand (``optuna create-study``) and both
    runs adopt it."""
    specs = {1: _spec(1), 8: _spec(8)}
    with _storage(kind, tmp_path) as (url, audit):
        for r in range(ROUNDS):
            name = f"race{r}"
            if r % 2:
                optuna.create_study(storage=open_storage(url), study_name=name,
                                    direction="maximize")
            barrier = threading.Barrier(len(specs))
            outcome: dict[int, str | None] = {}

            def start(batch: int, name: str = name, barrier: threading.Barrier = barrier,
                      outcome: dict[int, str | None] = outcome) -> None:
                barrier.wait()
                try:
                    StudySession.open(url, specs[batch], name, SamplerRequest("random", seed=0))
                    outcome[batch] = None
                except StudyError as exc:
                    outcome[batch] = str(exc)

            threads = [threading.Thread(target=start, args=(b,)) for b in specs]
            for t in threads:
                t.start()
            for t in threads:
                t.join(timeout=120)
            winners = [b for b, refusal in outcome.items() if refusal is None]
            assert len(outcome) == 2 and len(winners) == 1, f"round {r}: {outcome}"
            (winner,), (loser,) = winners, set(specs) - set(winners)
            refusal = outcome[loser]
            assert refusal is not None and "\n" not in refusal
            assert f"workload.batch: stored {winner}, given {loser}" in refusal, refusal
            study = _study(audit, name)
            assert study.user_attrs[SPEC_ATTR] == specs[winner].canonical()
            assert len(study.get_trials()) == 1, "the refused run wrote a trial"


def test_two_specs_under_their_derived_names_both_run(tmp_path: Path) -> None:
    """Without --study-name, two specs whose derived names are equal (they differ only in
    max_search_time) started together both run: the second goes beside the first, under
    the name plus its digest, as it would have a moment later."""
    url = f"sqlite:///{tmp_path / 's.db'}"
    specs = [_spec(1), _spec(1, max_search_time=1800.0)]
    barrier = threading.Barrier(2)
    opened: dict[int, StudySession] = {}

    def start(i: int) -> None:
        barrier.wait()
        opened[i] = StudySession.open(url, specs[i], None, SamplerRequest("random", seed=0))

    threads = [threading.Thread(target=start, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    names = {opened[i].study.study_name for i in range(2)}
    base = specs[0].default_study_name()
    assert len(names) == 2 and base in names
    for i in range(2):
        stored = _study(url, opened[i].study.study_name).user_attrs[SPEC_ATTR]
        assert stored == specs[i].canonical()


# ------------------------------------------------------------------ aoe-tune processes
def _tune(url: str, spec: Path, err: Path, n: int = 3, env: dict[str, str] | None = None
          ) -> subprocess.Popen:
    base = {k: v for k, v in os.environ.items() if not k.startswith("AOE_FAULT")}
    return subprocess.Popen(
        [str(AOE_TUNE), "--config", str(spec), "--storage", url, "--study-name", "s",
         "--n-trials", str(n), "--sampler", "random", "--no-progress"],
        stdout=subprocess.DEVNULL, stderr=err.open("w"), env={**base, **(env or {})})


def _spec_files(tmp_path: Path) -> dict[int, Path]:
    files = {}
    for batch in (1, 8):
        files[batch] = tmp_path / f"batch{batch}.json"
        files[batch].write_text(json.dumps(_spec(batch).canonical()))
    return files


def _refused_in_one_line(err: Path, stored: int, given: int) -> None:
    lines = err.read_text().strip().splitlines()
    assert len(lines) == 1, lines
    assert f"workload.batch: stored {stored}, given {given}" in lines[0], lines[0]


def _only_by(study: optuna.Study, pid: int, measured: int) -> None:
    """Every trial of ``study`` was run by process ``pid``, and ``measured`` measured."""
    trials = study.get_trials()
    assert {t.user_attrs.get(WORKER_ATTR, {}).get("pid") for t in trials} == {pid}
    assert count_measured(trials) == measured


@_slow  # two aoe-tune processes per storage
@pytest.mark.parametrize("kind", STORAGES)
def test_a_run_stopped_between_reading_and_writing_the_spec_is_refused(
        kind: str, tmp_path: Path) -> None:
    """The worst order: run A reads "no spec yet" and stops before writing its own; run
    B (another spec) writes its spec and measures; A continues and writes. Its write
    must not take: A exits 2 in one line, the study holds B's spec and measurements."""
    files = _spec_files(tmp_path)
    with _storage(kind, tmp_path) as (url, audit):
        late = _tune(url, files[1], tmp_path / "a.err",
                     env={"AOE_FAULT_AT": "write-once:1", "AOE_FAULT_SIGNAL": "SIGSTOP"})
        try:
            wait_stopped(late)
            first = _tune(url, files[8], tmp_path / "b.err")
            assert first.wait(timeout=300) == 0, (tmp_path / "b.err").read_text()
        finally:
            late.send_signal(signal.SIGCONT)
        assert late.wait(timeout=300) == 2
        _refused_in_one_line(tmp_path / "a.err", stored=8, given=1)
        study = _study(audit, "s")
        assert study.user_attrs[SPEC_ATTR] == _spec(8).canonical()
        _only_by(study, first.pid, measured=3)


@_slow  # two aoe-tune processes
def test_two_aoe_tune_with_different_specs_started_together(tmp_path: Path) -> None:
    """Started in the same instant on one new study: one exits 0, the other 2 in one
    line, and the study holds only the winner's spec and measurements."""
    files = _spec_files(tmp_path)
    url = f"sqlite:///{tmp_path / 's.db'}"
    procs = {b: _tune(url, files[b], tmp_path / f"{b}.err") for b in files}
    codes = {b: p.wait(timeout=300) for b, p in procs.items()}
    assert sorted(codes.values()) == [0, 2], codes
    winner = next(b for b, c in codes.items() if c == 0)
    loser = next(b for b, c in codes.items() if c == 2)
    _refused_in_one_line(tmp_path / f"{loser}.err", stored=winner, given=loser)
    study = _study(url, "s")
    assert study.user_attrs[SPEC_ATTR] == _spec(winner).canonical()
    _only_by(study, procs[winner].pid, measured=3)
