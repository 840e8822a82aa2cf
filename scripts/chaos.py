"""Chaos benchmark: workers on one study killed and paused at random, on every storage.

    python scripts/chaos.py                        # all four storages, every part
    python scripts/chaos.py --only specs --rounds 20   # different specs on one new study
    python scripts/chaos.py --storages sqlite --kills 20 --pauses 3   # a quick look
    python scripts/chaos.py --builders 1 ...       # every aoe-tune with a build pool
    python scripts/chaos.py --only pool --storages sqlite --kills 10 --budget 40

Part 1 (chaos): ``--workers`` separate ``aoe-tune`` processes tune one study
(the simulator study studies/qwen25_7b_decode_910b2.json, random sampler) to
``--budget`` measurements. Every 0.1-1 s one of them is SIGKILLed and started
again, or SIGSTOPped for 1 s to ``--max-pause`` s (past the heartbeat's grace
period) and then SIGCONTed, until ``--kills`` kills and ``--pauses`` pauses
are done; then the workers run to the budget.
Part 2 (together): ``--workers`` processes started in the same second on a
fresh storage (a new file; a new study name on PostgreSQL and the gRPC proxy),
``--rounds`` times.
Part 3 (specs): per round, two or three processes with DIFFERENT specs (the
same study at batch 1, 8 and 16) started in the same second on one new study:
one spec per study, every other run exits 2 in one line having measured nothing.
Part 4 (exports): three studies measured once, then per round three
``aoe-tune export ... --kb`` of them at once into one new knowledge base:
every entry that each export writes alone must be in it.
Part 5 (pool; only with ``--only pool``): one ``aoe-tune --builders B`` (B from
``--builders``, at least 1) on a study of small real cpu GEMMs (gcc builds,
timings on a pinned core) is SIGKILLed with its process group (its builds
and its timing in flight) 1.5-5 s after each start, ``--kills`` times; then
the same command runs to ``--budget``. Every result completed before a kill
must still be there, and once the last run ends no device-lease file may be
left in the runs' lease folder (a killed run's is removed by the next holder).

``--builders B`` passes ``--builders B`` to every ``aoe-tune`` the parts
start, so parts 1-4 run with a build pool too (on the simulator the pool's
threads share each worker's trials; the lease is per process).

Checks, from the storage and each worker's own output: exactly the budget
measured, no config measured twice, the best measured result is the one the
export writes, nothing left RUNNING, no traceback in any worker's output, no
worker exiting non-zero unless this script killed it. Prints markdown tables
for docs/RELIABILITY.md; every figure is a real process on a real storage
(PostgreSQL: a private server from tests.support.pg_server).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import signal
import socket
import subprocess
import sys
import tempfile
import time
import warnings
from collections import Counter
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass, field
from pathlib import Path

import optuna
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import SPEC_ATTR, WORKER_ATTR
from aoe_optuna.export.kb_entry import KEY_FIELDS
from aoe_optuna.spec.loader import load_spec
from aoe_optuna.study.run.device_lease import LEASE_DIR_ENV
from aoe_optuna.study.run.objective import is_measured

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the repo root: tests.support
from tests.support.pg_server import postgres_server, server_bin  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
SPEC = str(ROOT / "studies" / "qwen25_7b_decode_910b2.json")
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")
STORAGES = ("sqlite", "journal", "postgresql", "grpc")
FINISH_LIMIT_S = 900  # after the last kill, the workers must reach the budget within this
SPEC_BATCHES = (1, 8, 16)  # the specs of parts 3 and 4: SPEC at these batch sizes
SPECS_BUDGET = 4  # measurements of the run whose spec a part-3 study takes


@dataclass(frozen=True)
class Target:
    """One storage as the workers name it, and as this script reads it back."""

    label: str
    url: str  # what the workers get
    audit_url: str  # what the checks read (the database behind a gRPC proxy)


@dataclass
class Worker:
    """One ``aoe-tune`` process slot: restarted after each kill, its logs kept."""

    slot: int
    argv: list[str]
    logs: Path
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    paused_until: float | None = None
    unexpected: list[int] = field(default_factory=list)  # exit codes not caused by a kill
    done: bool = False

    def start(self) -> None:
        self.starts += 1
        log = open(self.logs / f"worker{self.slot}.{self.starts}.log", "wb")  # noqa: SIM115
        self.proc = subprocess.Popen(self.argv, stdout=log, stderr=subprocess.STDOUT,
                                     start_new_session=True)
        log.close()

    def signal(self, sig: int) -> None:
        assert self.proc is not None
        with suppress(ProcessLookupError):
            os.killpg(self.proc.pid, sig)


BUILDERS: list[str] = []  # ["--builders", "B"] with --builders B: added to every aoe-tune
POOL_SPACE = {
    "tile_m": [16, 32, 64], "tile_n": [16, 32, 64], "tile_k": [16, 32, 64],
    "pipeline": [0, 1, 2], "l1_prefetch": [0, 1], "output_align": [0, 1],
    "opt_level": ["O1", "O2"], "schedule": ["default", "balanced"],
    "unroll_factor": [0, 4], "layout": ["row_major"], "quantization": [False],
}


def _tune(*argv: str) -> list[str]:
    """An ``aoe-tune`` command line, with the build pool of ``--builders``."""
    return [AOE_TUNE, *argv, *BUILDERS]


def _worker_argv(url: str, study: str, budget: int) -> list[str]:
    return _tune("--config", SPEC, "--storage", url, "--study-name", study,
                 "--n-trials", str(budget), "--sampler", "random", "--no-progress",
                 "--timeout", "1e9")  # the spec's 3600 s of simulated time would end it at ~120


# ----------------------------------------------------------------- part 1: chaos
def chaos(target: Target, tmp: Path, args: argparse.Namespace, rng: random.Random) -> str:
    logs = tmp / f"chaos-{target.label}"
    logs.mkdir()
    study = "chaos"
    workers = [Worker(i, _worker_argv(target.url, study, args.budget), logs)
               for i in range(args.workers)]
    started = time.monotonic()
    for w in workers:
        w.start()
    kills = pauses = 0
    longest_pause = 0.0
    while kills < args.kills or pauses < args.pauses:
        time.sleep(rng.uniform(0.1, 1.0))
        _resume_due(workers)
        _reap(workers)
        live = [w for w in workers if not w.done and w.paused_until is None]
        if all(w.done for w in workers):
            break  # the budget was reached before the kills and pauses were done
        if not live:
            continue
        victim = rng.choice(live)
        if kills < args.kills and (pauses >= args.pauses or rng.random() < 0.85):
            victim.signal(signal.SIGKILL)
            assert victim.proc is not None
            victim.proc.wait()
            victim.start()
            kills += 1
        else:
            length = rng.uniform(1.0, args.max_pause)
            victim.signal(signal.SIGSTOP)
            victim.paused_until = time.monotonic() + length
            longest_pause = max(longest_pause, length)
            pauses += 1
    deadline = time.monotonic() + FINISH_LIMIT_S
    hung = 0
    while not all(w.done for w in workers):
        if time.monotonic() > deadline:
            for w in workers:
                if not w.done:
                    w.signal(signal.SIGKILL)
                    hung += 1
                    w.done = True
            break
        time.sleep(0.2)
        _resume_due(workers)
        _reap(workers)
    wall = time.monotonic() - started
    audit = _audit(target, study, tmp)
    tracebacks = _tracebacks(logs)
    unexpected = sum(len(w.unexpected) for w in workers)
    return (f"| {target.label} | {args.workers} | {args.budget} | {kills} | {pauses} "
            f"({longest_pause:.0f} s) | {audit['measured']} | {audit['duplicates']} | "
            f"{audit['missing']} | {audit['running']} | {tracebacks} | {unexpected} | {hung} | "
            f"{wall:.0f} |")


def _resume_due(workers: list[Worker]) -> None:
    now = time.monotonic()
    for w in workers:
        if w.paused_until is not None and now >= w.paused_until:
            w.signal(signal.SIGCONT)
            w.paused_until = None


def _reap(workers: list[Worker]) -> None:
    """Workers that exited on their own: done at 0, counted as unexpected otherwise."""
    for w in workers:
        if w.done or w.proc is None or w.paused_until is not None:
            continue
        rc = w.proc.poll()
        if rc is None:
            continue
        w.done = True
        if rc != 0:
            w.unexpected.append(rc)


# ----------------------------------------------------------------- part 2: together
def together(target: Target, tmp: Path, args: argparse.Namespace) -> str:
    failed_rounds = tracebacks = exits = wrong_count = running = 0
    budget = 2 * args.workers
    for r in range(args.rounds):
        fresh, study = _fresh(target, tmp, r)
        logs = tmp / f"together-{target.label}-{r}"
        logs.mkdir()
        workers = [Worker(i, _worker_argv(fresh.url, study, budget), logs)
                   for i in range(args.workers)]
        for w in workers:  # all in the same second
            w.start()
        codes = []
        for w in workers:
            assert w.proc is not None
            try:
                codes.append(w.proc.wait(timeout=FINISH_LIMIT_S))
            except subprocess.TimeoutExpired:
                w.signal(signal.SIGKILL)
                codes.append(w.proc.wait())
        found = _tracebacks(logs)
        audit = _audit(fresh, study, tmp) if any(c == 0 for c in codes) else None
        bad = sum(1 for c in codes if c != 0)
        exits += bad
        tracebacks += found
        if audit is not None:
            wrong_count += audit["measured"] != budget
            running += audit["running"]
        failed_rounds += bool(bad or found or audit is None or audit["measured"] != budget)
    return (f"| {target.label} | {args.rounds} | {args.workers} | {failed_rounds} | {exits} | "
            f"{tracebacks} | {wrong_count} | {running} |")


def _fresh(target: Target, tmp: Path, round_: int, part: str = "together"
           ) -> tuple[Target, str]:
    """A storage nobody has used: a new file, or a new study name on a shared server."""
    if target.label == "sqlite":
        url = f"sqlite:///{tmp / f'{part}{round_}.db'}"
        return Target(target.label, url, url), part
    if target.label == "journal":
        path = str(tmp / f"{part}{round_}.log")
        return Target(target.label, path, path), part
    return target, f"{part}{round_}"


# ----------------------------------------------------------------- part 3: specs
def specs(target: Target, tmp: Path, args: argparse.Namespace, rng: random.Random) -> str:
    files = _spec_files(tmp)
    started = accepted_twice = wrong_spec = refused = other_exits = loser_trials = 0
    wrong_count = tracebacks = 0
    for r in range(args.rounds):
        fresh, study = _fresh(target, tmp, r, "specs")
        logs = tmp / f"specs-{target.label}-{r}"
        logs.mkdir()
        batches = rng.sample(SPEC_BATCHES, rng.choice((2, 3)))
        workers = [Worker(i, _tune("--config", str(files[b]), "--storage", fresh.url,
                                   "--study-name", study, "--n-trials", str(SPECS_BUDGET),
                                   "--sampler", "random", "--no-progress", "--timeout", "1e9"),
                          logs) for i, b in enumerate(batches)]
        for w in workers:  # all in the same second
            w.start()
        codes = [_wait(w) for w in workers]
        started += len(workers)
        tracebacks += _tracebacks(logs)
        won = [i for i, c in enumerate(codes) if c == 0]
        accepted_twice += len(won) > 1
        for i, c in enumerate(codes):
            if c == 0:
                continue
            text = (logs / f"worker{i}.1.log").read_text(errors="replace")
            lines = [line for line in text.strip().splitlines()  # a notice, not an error:
                     if "waiting for the journal lock" not in line]  # the lock was busy
            one_line = len(lines) == 1 and "different spec" in lines[0]
            refused += c == 2 and one_line
            if not (c == 2 and one_line):
                other_exits += 1
                print(f"specs {target.label} round {r}: a run exited {c}: "
                      f"{' / '.join(lines[-3:])}", file=sys.stderr, flush=True)
        try:
            held = optuna.load_study(study_name=study, storage=_reader(fresh.audit_url))
        except KeyError:
            wrong_spec += 1  # nobody made the study
            continue
        winner = _spec_doc(files[batches[won[0]]]) if len(won) == 1 else None
        wrong_spec += winner is None or _normal(held.user_attrs.get(SPEC_ATTR)) != winner
        pids = {workers[i].proc.pid for i in won if workers[i].proc is not None}
        trials = held.get_trials()
        loser_trials += sum(1 for t in trials
                            if (t.user_attrs.get(WORKER_ATTR) or {}).get("pid") not in pids)
        wrong_count += sum(1 for t in trials if is_measured(t)) != SPECS_BUDGET
    return (f"| {target.label} | {args.rounds} | {started} | {accepted_twice} | {wrong_spec} | "
            f"{refused} | {other_exits} | {loser_trials} | {wrong_count} | {tracebacks} |")


def _spec_files(tmp: Path) -> dict[int, Path]:
    """SPEC at each of SPEC_BATCHES, as canonical spec files (written once)."""
    files = {}
    for batch in SPEC_BATCHES:
        files[batch] = tmp / f"spec-b{batch}.json"
        if not files[batch].exists():
            doc = load_spec(SPEC).canonical()
            doc["workload"]["batch"] = batch
            files[batch].write_text(json.dumps(doc))
    return files


def _spec_doc(path: Path) -> str:
    return _normal(load_spec(path).canonical())


def _normal(doc: object) -> str:
    return json.dumps(doc, sort_keys=True, default=str)


def _wait(w: Worker) -> int:
    assert w.proc is not None
    try:
        return w.proc.wait(timeout=FINISH_LIMIT_S)
    except subprocess.TimeoutExpired:
        w.signal(signal.SIGKILL)
        return w.proc.wait()


# ----------------------------------------------------------------- part 4: exports
def exports(target: Target, tmp: Path, args: argparse.Namespace) -> str:
    files = _spec_files(tmp)
    logs = tmp / f"exports-{target.label}"
    logs.mkdir()
    names = [f"export-b{b}" for b in SPEC_BATCHES]
    for batch, name in zip(SPEC_BATCHES, names, strict=True):  # the studies, one at a time
        subprocess.run(_tune("--config", str(files[batch]), "--storage", target.url,
                             "--study-name", name, "--n-trials", "3", "--sampler", "random",
                             "--no-progress"), check=True, capture_output=True, timeout=600)
    expected: set[tuple[object, ...]] = set()
    for name in names:  # what each export writes alone
        alone = logs / f"alone-{name}.json"
        subprocess.run(_export_argv(target.url, name, alone), check=True, capture_output=True,
                       timeout=600, cwd=logs)
        expected |= _kb_keys(alone)
    bad_exits = tracebacks = lossy = lost = 0
    for r in range(args.rounds):
        kb = logs / f"shared{r}.json"
        outs = [logs / f"export{r}.{i}.log" for i in range(len(names))]
        procs = []
        for name, out in zip(names, outs, strict=True):  # all at once
            with open(out, "wb") as fh:
                procs.append(subprocess.Popen(_export_argv(target.url, name, kb), stdout=fh,
                                              stderr=subprocess.STDOUT, cwd=logs))
        codes = [p.wait(timeout=600) for p in procs]
        bad_exits += sum(1 for c in codes if c != 0)
        tracebacks += sum(1 for o in outs if b"Traceback" in o.read_bytes())
        missing = len(expected - (_kb_keys(kb) if kb.exists() else set()))
        lossy += missing > 0
        lost += missing
    return (f"| {target.label} | {args.rounds} | {len(names)} | {len(expected)} | {bad_exits} | "
            f"{tracebacks} | {lossy} | {lost} |")


def _export_argv(url: str, study: str, kb: Path) -> list[str]:
    return [AOE_TUNE, "export", "--storage", url, "--study-name", study, "--kb", str(kb)]


def _kb_keys(kb: Path) -> set[tuple[object, ...]]:
    try:
        entries = json.loads(kb.read_text()).get("entries", [])
    except ValueError:  # a torn or half-written file: nothing of it counts
        return set()
    return {tuple(e.get(f) for f in KEY_FIELDS) for e in entries}


# ----------------------------------------------------------------- part 5: pool
def pool(target: Target, tmp: Path, args: argparse.Namespace, rng: random.Random) -> str:
    """Kill a pooled cpu-backend run ``--kills`` times, then finish it (see the module)."""
    fresh, study = _fresh(target, tmp, 0, "pool")
    spec = tmp / "pool-cpu.json"
    spec.write_text(json.dumps({
        "op_name": "GemmKernel", "search_space": POOL_SPACE,
        "optimization_objective": "throughput", "hardware": {"soc": "Ascend910B2"},
        "workload": {"gemm": {"M": 64, "K": 64, "N": 64, "dtype": "fp32"}},
        "backend": {"name": "cpu", "max_seconds": 0.05,
                    "work_dir": str(tmp / f"pool-builds-{target.label}")}}))
    argv = [AOE_TUNE, "--config", str(spec), "--storage", fresh.url, "--study-name", study,
            "--n-trials", str(args.budget), "--builders", str(max(1, args.builders)),
            "--sampler", "random", "--no-progress"]
    logs = tmp / f"pool-{target.label}"
    logs.mkdir()
    leases = tmp / f"pool-leases-{target.label}"  # the runs' own: nothing else leases there
    env = {**os.environ, LEASE_DIR_ENV: str(leases)}
    started = time.monotonic()
    kept: dict[int, float | None] = {}
    lost = 0
    for k in range(args.kills):
        with open(logs / f"run{k}.log", "wb") as log:
            proc = subprocess.Popen([*argv, "--seed", str(k)], stdout=log,
                                    stderr=subprocess.STDOUT, start_new_session=True, env=env)
        time.sleep(rng.uniform(1.5, 5.0))  # start-up takes about 1.5 s
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        done = _completed(fresh, study)
        lost += sum(1 for n, v in kept.items() if done.get(n) != v)
        kept = done
    before = _count_measured(fresh, study)
    with open(logs / "final.log", "wb") as log:
        final = subprocess.run([*argv, "--seed", "999"], stdout=log, stderr=subprocess.STDOUT,
                               timeout=FINISH_LIMIT_S, env=env)
    left = len(list(leases.iterdir())) if leases.is_dir() else 0
    done = _completed(fresh, study)
    lost += sum(1 for n, v in kept.items() if done.get(n) != v)
    audit = _audit(fresh, study, tmp, export=False)
    return (f"| {target.label} | {max(1, args.builders)} | {args.kills} | {args.budget} "
            f"| {before} | {audit['measured']} | {audit['duplicates']} | {audit['running']} "
            f"| {lost} | {final.returncode} | {_tracebacks(logs)} | {left} "
            f"| {time.monotonic() - started:.0f} |")


def _completed(target: Target, study: str) -> dict[int, float | None]:
    """Trial number -> value of the study's COMPLETE trials (none before it exists)."""
    try:
        held = optuna.load_study(study_name=study, storage=_reader(target.audit_url))
    except KeyError:
        return {}
    return {t.number: t.value for t in held.get_trials(states=(TrialState.COMPLETE,))}


def _count_measured(target: Target, study: str) -> int:
    try:
        held = optuna.load_study(study_name=study, storage=_reader(target.audit_url))
    except KeyError:
        return 0
    return sum(1 for t in held.get_trials() if is_measured(t))


# ----------------------------------------------------------------- checks
def _audit(target: Target, study: str, tmp: Path, export: bool = True) -> dict[str, int]:
    storage = _reader(target.audit_url)
    trials = optuna.load_study(study_name=study, storage=storage).get_trials()
    measured = [t for t in trials if is_measured(t)]
    configs = Counter(tuple(sorted(t.params.items())) for t in measured)
    best = max((v for v in map(_value, measured) if v is not None), default=None)
    return {
        "measured": len(measured),
        "duplicates": sum(c - 1 for c in configs.values()),
        "running": sum(1 for t in trials if t.state == TrialState.RUNNING),
        "missing": int(export and best is not None
                       and not _exported(target, study, tmp, best)),
    }


def _value(trial: FrozenTrial) -> float | None:
    """tokens/s of a measured trial, whether its worker or a heartbeat finished it."""
    if trial.state == TrialState.COMPLETE and trial.value is not None:
        return float(trial.value)
    value = trial.user_attrs.get("tokens_per_s")
    return float(value) if isinstance(value, (int, float)) else None


def _exported(target: Target, study: str, tmp: Path, best: float) -> bool:
    """Whether ``aoe-tune export`` writes the best measured result into a fresh KB."""
    kb = tmp / f"kb-{target.label}-{study}.json"
    run = subprocess.run([AOE_TUNE, "export", "--storage", target.url, "--study-name", study,
                          "--kb", str(kb)], capture_output=True, text=True, timeout=300)
    if run.returncode != 0 or not kb.exists():
        return False
    values = [e.get("value") for e in json.loads(kb.read_text()).get("entries", [])]
    return bool(values) and all(abs(v - best) <= 1e-9 * abs(best) for v in values)


def _reader(url: str) -> optuna.storages.BaseStorage | str:
    if url.endswith(".log") and "://" not in url:
        from optuna.storages.journal import JournalFileBackend, JournalStorage

        return JournalStorage(JournalFileBackend(url))
    return url


def _tracebacks(logs: Path) -> int:
    return sum(1 for log in logs.glob("*.log") if b"Traceback" in log.read_bytes())


# ----------------------------------------------------------------- storages
@contextmanager
def _targets(names: list[str], tmp: Path) -> Iterator[list[Target]]:
    with ExitStack() as stack:
        targets = []
        for name in names:
            if name == "sqlite":
                url = f"sqlite:///{tmp / 'chaos.db'}"
                targets.append(Target(name, url, url))
            elif name == "journal":
                path = str(tmp / "chaos.log")
                targets.append(Target(name, path, path))
            elif name == "postgresql":
                if server_bin() is None:
                    print("postgresql: skipped (no server binaries)", file=sys.stderr)
                    continue
                url = stack.enter_context(postgres_server())
                targets.append(Target(name, url, url))
            elif name == "grpc":
                behind = f"sqlite:///{tmp / 'proxy.db'}"
                targets.append(Target(name, stack.enter_context(_grpc_proxy(behind)), behind))
        yield targets


@contextmanager
def _grpc_proxy(behind: str) -> Iterator[str]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proxy = subprocess.Popen([sys.executable, "-m", "aoe_optuna.study.storage.grpc_proxy", behind,
                              str(port)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        from optuna.storages import GrpcStorageProxy

        warnings.filterwarnings("ignore", category=optuna.exceptions.ExperimentalWarning)
        GrpcStorageProxy(host="127.0.0.1", port=port).wait_server_ready(timeout=60)
        yield f"grpc://127.0.0.1:{port}"
    finally:
        proxy.terminate()
        proxy.wait(timeout=30)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--storages", default=",".join(STORAGES),
                    help=f"comma-separated, from {', '.join(STORAGES)}")
    ap.add_argument("--only", choices=("chaos", "together", "specs", "exports", "pool"),
                    help="one part; pool runs only when named")
    ap.add_argument("--builders", type=int, default=0, metavar="B",
                    help="pass --builders B to every aoe-tune (0: no build pool); "
                         "the pool part uses at least 1")
    ap.add_argument("--workers", type=int, default=4)
    ap.add_argument("--budget", type=int, default=300, help="measurements of the chaos study")
    ap.add_argument("--kills", type=int, default=100)
    ap.add_argument("--pauses", type=int, default=10)
    ap.add_argument("--max-pause", type=float, default=40.0,
                    help="seconds; past the 25 s of heartbeat plus grace period")
    ap.add_argument("--rounds", type=int, default=5, help="same-second starts per storage")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    names = [n.strip() for n in args.storages.split(",") if n.strip()]
    unknown = sorted(set(names) - set(STORAGES))
    if unknown:
        ap.error(f"--storages: unknown {unknown[0]!r}: expected some of {', '.join(STORAGES)}")
    if args.builders < 0:
        ap.error(f"--builders: expected 0 or a positive number, got {args.builders}")
    if args.builders:
        BUILDERS[:] = ["--builders", str(args.builders)]
    optuna.logging.set_verbosity(optuna.logging.ERROR)
    rng = random.Random(args.seed)
    with tempfile.TemporaryDirectory(prefix="aoe-chaos-") as d:
        tmp = Path(d)
        os.chmod(tmp, 0o755)  # the PostgreSQL server user reads nothing here, workers do
        with _targets(names, tmp) as targets:
            if args.only in (None, "chaos"):
                print("| storage | workers | budget | kills | pauses (longest) | measured | "
                      "duplicate configs | best missing from export | left RUNNING | "
                      "worker outputs with a traceback | unexpected exits | hung | wall s |")
                print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
                for t in targets:
                    print(chaos(t, tmp, args, rng), flush=True)
                print()
            if args.only in (None, "together"):
                print("| storage | rounds | workers started together | failed rounds | "
                      "non-zero exits | tracebacks | rounds with measured != budget | "
                      "left RUNNING |")
                print("|---|---|---|---|---|---|---|---|")
                for t in targets:
                    print(together(t, tmp, args), flush=True)
                print()
            if args.only in (None, "specs"):
                print("| storage | rounds | runs started (2-3 specs a round) | rounds with two "
                      "specs accepted | studies not holding the accepted run's spec | refused "
                      "runs (exit 2, one error line) | other exits | trials by refused runs | "
                      "rounds with measured != budget | tracebacks |")
                print("|---|---|---|---|---|---|---|---|---|---|")
                for t in targets:
                    print(specs(t, tmp, args, rng), flush=True)
                print()
            if args.only in (None, "exports"):
                print("| storage | rounds | exports at once into one KB | entries expected | "
                      "non-zero exits | tracebacks | rounds that lost an entry | "
                      "entries lost |")
                print("|---|---|---|---|---|---|---|---|")
                for t in targets:
                    print(exports(t, tmp, args), flush=True)
            if args.only == "pool":
                print("| storage | builders | kills | budget | measured by the killed runs | "
                      "measured | duplicate configs | left RUNNING | results lost | "
                      "final exit | outputs with a traceback | lease files left | wall s |")
                print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
                for t in targets:
                    print(pool(t, tmp, args, rng), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
