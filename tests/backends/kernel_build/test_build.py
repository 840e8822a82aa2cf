"""The shared build machinery: cache keys, real compiles, limited runs, failure kinds, timing."""

from __future__ import annotations

import os
import signal
import sys
import time

import pytest

from aoe_optuna.backends.kernel_build import (
    EXIT_WRONG_RESULT,
    BuildCache,
    build_key,
    failure_from_run,
    first_lines,
    run_limited,
    toolchain_id,
)
from aoe_optuna.backends.timing import TimingPolicy, median_precision, summarize, time_call

GOOD_C = "int answer(void) { return 42; }\n"
BROKEN_C = "int answer(void) { return 42 }\n"  # missing semicolon
COMMANDS = [["cc", "-O1", "-fPIC", "-shared", "-o", "lib.so", "x.c"]]


@pytest.fixture(scope="module")
def toolchain() -> str:
    return toolchain_id("cc")


def test_key_depends_on_sources_commands_and_toolchain(toolchain: str) -> None:
    base = build_key({"x.c": GOOD_C}, COMMANDS, toolchain)
    assert base == build_key({"x.c": GOOD_C}, COMMANDS, toolchain)
    assert base != build_key({"x.c": GOOD_C + "\n"}, COMMANDS, toolchain)
    assert base != build_key({"y.c": GOOD_C}, COMMANDS, toolchain)
    assert base != build_key({"x.c": GOOD_C}, [[*COMMANDS[0], "-g"]], toolchain)
    assert base != build_key({"x.c": GOOD_C}, COMMANDS, toolchain + " (patched)")


def test_toolchain_id_names_the_compiler_version(toolchain: str) -> None:
    assert "cc" in toolchain and "|" in toolchain
    with pytest.raises(RuntimeError, match="not found"):
        toolchain_id("no-such-compiler-aoe")


def test_real_build_is_cached_and_work_dirs_removed(tmp_path, toolchain: str) -> None:
    cache = BuildCache(tmp_path)
    first = cache.get_or_build({"x.c": GOOD_C}, COMMANDS, "lib.so", toolchain, timeout_s=60)
    assert first.ok and not first.cached and first.artifact.exists()
    mtime = first.artifact.stat().st_mtime_ns
    again = cache.get_or_build({"x.c": GOOD_C}, COMMANDS, "lib.so", toolchain, timeout_s=60)
    assert again.cached and again.artifact == first.artifact
    assert again.artifact.stat().st_mtime_ns == mtime
    assert (cache.builds, cache.hits) == (1, 1)
    assert list((tmp_path / "work").iterdir()) == []
    # a second cache on the same root (another worker) reuses the published artifact
    other = BuildCache(tmp_path)
    assert other.get_or_build({"x.c": GOOD_C}, COMMANDS, "lib.so", toolchain, 60).cached


def test_compiler_error_is_a_build_failure_and_not_retried(tmp_path, toolchain: str) -> None:
    cache = BuildCache(tmp_path)
    result = cache.get_or_build({"x.c": BROKEN_C}, COMMANDS, "lib.so", toolchain, 60)
    assert not result.ok and result.failed_run is not None
    m = failure_from_run(result.failed_run, "build", "build")
    assert m is not None and m.failure_kind == "build"
    assert "error" in m.reason and "x.c" in m.reason
    again = cache.get_or_build({"x.c": BROKEN_C}, COMMANDS, "lib.so", toolchain, 60)
    assert not again.ok and again.failed_run is result.failed_run
    assert again.cached and again.seconds == 0.0  # remembered: nothing built, no time spent
    assert cache.builds == 1
    assert list((tmp_path / "work").iterdir()) == []


def test_source_names_cannot_escape_the_work_dir(tmp_path, toolchain: str) -> None:
    with pytest.raises(RuntimeError, match="escapes"):
        BuildCache(tmp_path).get_or_build({"../evil.c": GOOD_C}, COMMANDS, "lib.so",
                                          toolchain, 60)


def test_timeout_kills_the_whole_process_group(tmp_path) -> None:
    pid_file = tmp_path / "child.pid"
    script = (
        "import subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
        f"open({str(pid_file)!r}, 'w').write(str(child.pid))\n"
        "time.sleep(60)\n"
    )
    start = time.perf_counter()
    result = run_limited([sys.executable, "-c", script], timeout_s=1.5)
    assert result.timed_out and result.returncode is None
    assert time.perf_counter() - start < 10
    child = int(pid_file.read_text())
    deadline = time.time() + 5
    while time.time() < deadline:  # the killed child may linger as a zombie for a moment
        try:
            os.kill(child, 0)
        except ProcessLookupError:
            break
        if _is_zombie(child):
            break
        time.sleep(0.05)
    else:
        pytest.fail("the child of the timed-out process survived")
    m = failure_from_run(result, "run")
    assert m is not None and m.failure_kind == "timeout" and "1.5 s" in m.reason


def _is_zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize(
    ("code", "kind", "words"),
    [
        (f"import os, signal; os.kill(os.getpid(), signal.{signal.SIGSEGV.name})", "runtime",
         "SIGSEGV"),
        (f"import sys; print('bad C[1,2]', file=sys.stderr); sys.exit({EXIT_WRONG_RESULT})",
         "accuracy", "bad C[1,2]"),
        ("import sys; print('boom', file=sys.stderr); sys.exit(1)", "runtime", "boom"),
    ],
)
def test_exit_statuses_map_to_failure_kinds(code: str, kind: str, words: str) -> None:
    result = run_limited([sys.executable, "-c", code], timeout_s=30)
    m = failure_from_run(result, "run")
    assert m is not None and not m.ok
    assert m.failure_kind == kind and words in m.reason
    assert m.cost_s > 0


def test_success_is_not_a_failure() -> None:
    result = run_limited([sys.executable, "-c", "print('ok')"], timeout_s=30)
    assert result.ok and result.stdout.strip() == "ok"
    assert failure_from_run(result, "run") is None


def test_first_lines_keeps_the_head_of_a_message() -> None:
    text = "\n\n".join(f"line {i}" for i in range(20))
    assert first_lines(text, lines=3) == "line 0\nline 1\nline 2"
    assert len(first_lines("x" * 5000, chars=100)) == 100


def test_summary_median_spread_and_precision() -> None:
    r = summarize([1.0, 2.0, 3.0, 4.0, 100.0])
    assert r.median_s == 3.0
    assert r.spread == pytest.approx((4.0 - 2.0) / 3.0)
    assert median_precision([2.0, 2.0, 2.0]) == 0.0
    assert median_precision([1.0]) == float("inf")
    # sigma = 1.4826 * MAD(=1) ; half-width = 1.96 * 1.2533 * sigma / sqrt(4)
    assert median_precision([9.0, 10.0, 11.0, 10.0]) == pytest.approx(
        1.96 * 1.2533 * 1.4826 * 0.5 / 2 / 10.0, rel=1e-3)


def test_timing_warms_up_and_stops_at_the_caps() -> None:
    calls = []

    def noisy() -> None:
        calls.append(1)
        time.sleep(0.001 * (1 + len(calls) % 3))  # 1, 2, 3 ms: never 0.01% precise

    r = time_call(noisy, TimingPolicy(warmup=2, min_repeats=3, max_repeats=7,
                                      rel_precision=1e-4, max_seconds=10))
    assert r.repeats == 7 and len(calls) == 9
    calls.clear()
    slow = TimingPolicy(warmup=0, min_repeats=2, max_repeats=100, rel_precision=1e-4,
                        max_seconds=0.05)
    assert time_call(noisy, slow).repeats < 50


def test_timing_stops_early_once_precise() -> None:
    def steady() -> None:
        sum(range(20000))

    r = time_call(steady, TimingPolicy(warmup=1, min_repeats=5, max_repeats=200,
                                       rel_precision=0.5, max_seconds=10))
    # 5 on a quiet host; a shared host's spell (a call at twice its time) can ask a
    # few more, never the 200 a rule that does not stop would take
    assert 5 <= r.repeats <= 20 and r.median_s > 0
