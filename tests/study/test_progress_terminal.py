"""The live display on a real terminal: ``aoe-tune`` in a pseudo-terminal widened from 80
to 100 and 200 columns during the run, its output replayed frame by frame into a terminal
emulator (pyte), every frame read the way a user reads the screen; and plain lines when
the output is piped."""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import shlex
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from aoe_optuna.study.report.text_fit import join_command

pyte = pytest.importorskip("pyte", reason="pyte (the dev extra) renders the terminal")

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "gemm_4096_910b2.toml"
PARAMS = ("tile_m", "tile_k", "tile_n", "pipeline", "l1_prefetch", "output_align")
AOE_TUNE = Path(sys.executable).parent / "aoe-tune"
N = 120  # 40 measurements at each width: enough frames to see each one laid out
BAR = re.compile(rf"^measurements [━─]+ (\d[\d,]*)/{N} (\d+:\d\d:\d\d) "
                 r"ETA (\d+:\d\d:\d\d|-:--:--)$")
FRAME_START = b"\r\x1b[2K"  # rich's Live moves back over its last frame with this


def _tune_argv(storage: Path, n: int) -> list[str]:
    return [str(AOE_TUNE), "--config", str(SPEC), "--storage", str(storage), "--n-trials",
            str(n), "--sampler", "random", "--seed", "0", "--timeout", "1e9"]


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES", "NO_COLOR")}
    env["TERM"] = "xterm-256color"
    return env


def _run_in_pty(argv: list[str], widths: list[tuple[int, int]], rows: int,
                cwd: Path) -> tuple[bytes, list[tuple[int, int]]]:
    """Everything the command wrote to a terminal of ``rows`` lines, and where in it the
    terminal was widened: ``widths`` holds (columns, from this many measurements on); the
    terminal grows as a user drags its corner, and the command hears of it (SIGWINCH)."""
    master, slave = pty.openpty()

    def resize(columns: int) -> None:
        fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))

    resize(widths[0][0])
    proc = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave, cwd=cwd,
                            env=_env(), start_new_session=True)
    os.close(slave)
    out = bytearray()
    resized = [(0, widths[0][0])]  # (offset in the output, columns from there on)
    deadline = time.monotonic() + 1200
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([master], [], [], 1.0)
            if not ready:
                if proc.poll() is not None:
                    break
                continue
            try:
                chunk = os.read(master, 65536)
            except OSError:  # the other side closed: the command ended
                break
            if not chunk:
                break
            out += chunk
            counts = re.findall(rb" ([0-9,]+)/%d " % N, out[-4096:])
            measured = int(counts[-1].replace(b",", b"")) if counts else 0
            for columns, after in widths[len(resized):len(resized) + 1]:
                if measured >= after:
                    resize(columns)
                    resized.append((len(out), columns))
    finally:
        os.close(master)
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=30)
    assert proc.returncode == 0, out.decode(errors="replace")[-2000:]
    return bytes(out), resized


def _frames(output: bytes, resized: list[tuple[int, int]],
            rows: int) -> list[tuple[int, list[str]]]:
    """(the terminal's width, the screen) just before each redraw, and at the end."""
    screen = pyte.Screen(resized[0][1], rows)
    stream = pyte.ByteStream(screen)
    frames, offset, columns = [], 0, resized[0][1]
    for i, piece in enumerate(output.split(FRAME_START)):
        for at, wider in resized:
            if offset >= at and wider > columns:
                screen.resize(rows, wider)
                columns = wider
        data = (FRAME_START if i else b"") + piece
        stream.feed(data)
        offset += len(data)
        frames.append((columns, [line.rstrip() for line in screen.display]))
    return frames


def _check_frame(lines: list[str]) -> tuple[int, str, list[str], int] | None:
    """(measured, ETA, the best config's key=value words, the bar line's length) of the
    frame's display, or None when it has none yet; fails on a display that lost its bar,
    a figure or a word."""
    bars = [i for i, line in enumerate(lines)
            if line.startswith("measurements ") and f"/{N} " in line]
    if not bars:
        return None
    assert len(bars) == 1, "\n".join(lines)
    i = bars[0]
    match = BAR.match(lines[i])
    assert match, f"the bar line lost a part: {lines[i]!r}"
    assert lines[i + 1].startswith("  best"), "\n".join(lines[i:i + 4])
    best = [lines[i + 1]]
    j = i + 2
    while lines[j].startswith("    "):
        best.append(lines[j])
        j += 1
    assert lines[j].startswith("  virtual "), "\n".join(lines[i:j + 1])
    words = " ".join(best).split()
    pairs = [w for w in words if "=" in w]
    if words[:2] != ["best:", "no"]:
        assert re.fullmatch(r"x\d+\.\d{3}", words[3]), words  # the speedup over the baseline
        assert [p.split("=")[0] for p in pairs] == list(PARAMS), words  # none cut, none lost
        assert all(re.fullmatch(r"\w+=\w+", p) for p in pairs), pairs
    return int(match.group(1).replace(",", "")), match.group(3), pairs, len(lines[i])


@pytest.mark.slow  # 120 measurements
def test_the_live_display_holds_in_a_terminal_at_80_100_and_200_columns(tmp_path: Path) -> None:
    """One run of 120 measurements in a terminal of 80 columns, widened to 100 at 40
    measurements and to 200 at 80: every frame at every width keeps the bar, N/M, the
    elapsed time, the ETA and the whole best config, laid out for the width it had."""
    rows = 60
    output, resized = _run_in_pty(_tune_argv(tmp_path / "study.log", N),
                                  [(80, 0), (100, N // 3), (200, 2 * N // 3)], rows, tmp_path)
    assert [c for _, c in resized] == [80, 100, 200]
    frames = _frames(output, resized, rows)
    seen = [(c, s) for c, f in frames if (s := _check_frame(f)) is not None]
    counts = [s[0] for _, s in seen]
    assert counts == sorted(counts) and counts[-1] == N
    assert any(re.fullmatch(r"\d+:\d\d:\d\d", s[1]) for _, s in seen)  # a measured ETA
    assert seen[-1][1][2]  # the final frame shows the best config
    # a frame fills its width (the bar takes at most 60 columns), the one it was drawn for
    laid_for = {columns: [s[3] for c, s in seen if c == columns] for columns in (80, 100, 200)}
    assert laid_for[80].count(79) >= 3 and laid_for[100].count(99) >= 3, laid_for
    assert laid_for[200].count(101) >= 3, laid_for
    final = frames[-1][1]
    title = next(line for line in final if line.startswith("study ") and "measurements" in line)
    assert title.startswith("study GemmKernel-Ascend910B2-gemm4096x4096x4096: reached"), title
    steps = final[final.index("next:") + 1:]
    export = [steps[0]]
    while export[-1].endswith("\\"):
        export.append(steps[len(export)])
    argv = shlex.split(join_command(export))
    assert argv[:2] == ["aoe-tune", "export"] and "--study-name" in argv
    assert argv[argv.index("--storage") + 1] == str(tmp_path / "study.log")


def test_piped_output_is_plain_lines(tmp_path: Path) -> None:
    proc = subprocess.run(_tune_argv(tmp_path / "study.log", 12), capture_output=True,
                          text=True, cwd=tmp_path, env=_env(), timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert "\x1b[" not in proc.stderr and "━" not in proc.stderr
    last = [line for line in proc.stderr.splitlines() if line.startswith("[12/12 measured, ")]
    assert len(last) == 1 and re.match(r"\[12/12 measured, \d+:\d\d:\d\d, ETA 0:00:00\] best "
                                       r"[\d,.]+ tok/s \(x\d\.\d{3} vs baseline, ", last[0])
