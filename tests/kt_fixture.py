"""A tiny Kernel Tuner cache file with a known table of values, for the replay/bench tests.

Parameters: a in {1, 2, 3}, b in {1, 2}, c in {4} (fixed), d in {0, 1}: a
12-point cartesian product. Eight configs are recorded: six with a time, one
CompilationFailedConfig and one RuntimeFailedConfig.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

KEYS = ["a", "b", "c", "d"]
TUNE_PARAMS = {"a": [1, 2, 3], "b": [1, 2], "c": [4], "d": [0, 1]}
# (a, b, d) -> time in ms or a failure string
TABLE: dict[tuple[int, int, int], float | str] = {
    (1, 1, 0): 10.0,
    (1, 2, 0): 8.0,
    (2, 1, 0): 5.0,
    (2, 2, 1): 4.0,  # the optimum
    (3, 1, 0): 6.0,
    (3, 2, 1): 20.0,
    (1, 1, 1): "CompilationFailedConfig",
    (3, 1, 1): "RuntimeFailedConfig",
}
COMPILE_MS, VERIFY_MS, BENCH_MS = 100.0, 10.0, 40.0  # cost of every entry: 0.15 s


def entry_lines() -> list[str]:
    lines = []
    for (a, b, d), t in TABLE.items():
        entry = {"a": a, "b": b, "c": 4, "d": d, "time": t,
                 "times": [t] * 3 if not isinstance(t, str) else [],
                 "compile_time": COMPILE_MS, "verification_time": VERIFY_MS,
                 "benchmark_time": BENCH_MS}
        lines.append(json.dumps({f"{a},{b},4,{d}": entry})[1:-1])
    return lines


def cache_text() -> str:
    """Laid out as Kernel Tuner writes it: header, then one entry per line."""
    head = json.dumps({"device_name": "Test GPU", "kernel_name": "tiny", "problem_size": [8],
                       "tune_params_keys": KEYS, "tune_params": TUNE_PARAMS,
                       "objective": "time"})[:-1]
    return head + ', "cache": {\n' + ",\n".join(entry_lines()) + "}\n}"


def write_cache(folder: Path, gz: bool = False, name: str = "tiny") -> Path:
    text = cache_text()
    if gz:
        path = folder / f"{name}.json.gz"
        path.write_bytes(gzip.compress(text.encode()))
    else:
        path = folder / f"{name}.json"
        path.write_text(text)
    return path


def shared_spaces() -> Path:
    """../shared/spaces relative to the repository root."""
    return Path(__file__).resolve().parents[1].parent / "shared" / "spaces"
