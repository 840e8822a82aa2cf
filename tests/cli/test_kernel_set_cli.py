"""``aoe-tune kernel-set`` (its ``main``, in the test's process): a run on the simulator
whose header gcc compiles and whose dispatch is right for every M, a resume, an
evaluation on another log, and the bad inputs refused in one line with nothing
written."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import main
from tests.support.in_process import aoe_tune_here
from tests.support.refusal import refused

CC = shutil.which("gcc")
MIX = '{"batch": {"low": 1, "high": 32}}'
NAME = "ks"
SPACE = {"tile_m": [16, 64], "tile_n": [256], "tile_k": [64], "l1_k": [256],
         "split_k": [1, 16], "layout_b": ["zN"]}
DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "ks.h"

int main(int argc, char **argv) {
    uint32_t m, k, n;
    if (argc != 3) return 2;
    k = (uint32_t)atoi(argv[1]);
    n = (uint32_t)atoi(argv[2]);
    for (m = 1; m <= 40; ++m) {
        int in_range = -1;
        const aoe_ks_kernel_t *e = aoe_ks_dispatch("Ascend910B2", "TinyGemm", "fp16", k, n,
                                                   m, &in_range);
        if (e == NULL) return 1;
        printf("%u %d %d %d\n", m, in_range, e->tile_m, e->split_k);
    }
    return 0;
}
"""


def _spec(folder: Path, space: dict = SPACE) -> Path:
    path = folder / "tiny.json"
    path.write_text(json.dumps({
        "op_name": "TinyGemm", "search_space": space, "hardware": {"soc": "Ascend910B2"},
        "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024},
        "backend": {"name": "simulator", "noise": 0}}))
    return path


def _run(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return aoe_tune_here(["kernel-set", *args], folder)


@pytest.mark.parametrize(("log", "args", "needles"), [
    ("", (), ("empty.csv", "line 1", "a header naming one of batch, seq_len")),
    ("batch,count\n", (), ("rows", "at least one row")),
    ("batch,count\n4,x\n", (), ("line 2, column 'count'", "a whole number")),
    ("batch,count\n1,5\n8,3\n64,1\n", ("--k", "4"), ("--k 4", "3 distinct M")),
    (None, ("--k", "9"), ("--k: expected 1 to 8",)),
])
def test_a_bad_mix_or_k_is_one_line_and_writes_nothing(tmp_path, monkeypatch, capsys, log,
                                                        args, needles):
    """In this process: a refusal is checked before any storage, measurement or file."""
    spec = _spec(tmp_path)
    mix = MIX
    if log is not None:
        (tmp_path / "empty.csv").write_text(log)
        mix = "empty.csv"
    before = sorted(p.name for p in tmp_path.iterdir())
    monkeypatch.chdir(tmp_path)
    code = main(["kernel-set", "--config", str(spec), "--mix", mix, "--storage",
                 "sqlite:///ks.db", "--kb", "kb.json", "--header", "ks.h", *args])
    out = capsys.readouterr()
    refused(subprocess.CompletedProcess([], code, out.out, out.err), *needles)
    assert sorted(p.name for p in tmp_path.iterdir()) == before


@pytest.mark.slow  # a run, its resume, an export and evaluations
@pytest.mark.skipif(CC is None, reason="needs gcc")
def test_a_run_exports_a_set_whose_c_dispatch_is_right_for_every_m(tmp_path):
    spec = _spec(tmp_path)
    url = "sqlite:///ks.db"
    run = _run(tmp_path, "--config", str(spec), "--mix", MIX, "--storage", url, "--study-name",
               NAME, "--n-trials", "16", "--k", "2", "--kb", "kb.json", "--header", "ks.h",
               "--no-progress")
    assert run.returncode == 0, run.stderr
    assert " K kernels" in run.stdout and "sets of 2:" in run.stdout
    entries = json.loads((tmp_path / "kb.json").read_text())["entries"]
    (tmp_path / "driver.c").write_text(DRIVER)
    subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "driver.c",
                    "-o", "driver"], cwd=tmp_path, check=True, capture_output=True, timeout=60)
    for k, n in {(e["K"], e["N"]) for e in entries}:
        ranges = sorted((e["m_range"], e["config"]) for e in entries
                        if (e["K"], e["N"]) == (k, n))
        assert ranges[0][0][0] == 1 and ranges[-1][0][1] == 32
        out = subprocess.run([str(tmp_path / "driver"), str(k), str(n)], capture_output=True,
                             text=True, check=True, timeout=60).stdout.split("\n")
        for line in filter(None, out):
            m, inside, tile_m, split_k = map(int, line.split())
            span, config = next(((s, c) for s, c in ranges if s[0] <= m <= s[1]), ranges[-1])
            assert inside == int(m <= 32)
            assert (tile_m, split_k) == (config["tile_m"], config["split_k"])
    # a larger budget resumes the run: four more measurements, none taken twice
    run = _run(tmp_path, "--storage", url, "--study-name", NAME, "--n-trials", "20", "--k",
               "1", "--no-progress")
    assert run.returncode == 0, run.stderr
    storage = optuna.storages.RDBStorage(f"sqlite:///{tmp_path / 'ks.db'}")
    pairs = [(s.study_name, tuple(sorted(t.params.items())), t.user_attrs["M"])
             for s in optuna.get_all_study_summaries(storage) if s.study_name != NAME
             for t in optuna.load_study(study_name=s.study_name, storage=storage).trials]
    assert len(pairs) == 20 and len(set(pairs)) == 20
    # the sets on another day's log, within the range: a table, nothing measured
    (tmp_path / "inside.csv").write_text("batch,count\n1,9\n7,3\n32,1\n")
    size = (tmp_path / "ks.db").stat().st_size
    run = _run(tmp_path, "--storage", url, "--study-name", NAME, "--evaluate", "inside.csv")
    assert run.returncode == 0, run.stderr
    assert "on batch 1..32 (3 values, inside.csv: serving log)" in run.stdout
    (tmp_path / "outside.csv").write_text("batch,count\n1,9\n48,3\n")
    refused(_run(tmp_path, "--storage", url, "--study-name", NAME, "--evaluate",
                  "outside.csv"), "M 48 of qkv_proj/4608x3584 lies outside every range",
             "(M 1..32)")
    assert (tmp_path / "ks.db").stat().st_size == size


@pytest.mark.slow  # a run of a few measurements
def test_more_kernels_than_good_configs_is_refused_after_the_run_writing_no_file(tmp_path):
    # split_k 1 or 16 and nothing else: one of the two is the faster at every M of each
    spec = _spec(tmp_path, {**SPACE, "tile_m": [64]})
    run = _run(tmp_path, "--config", str(spec), "--mix", MIX, "--storage", "sqlite:///ks.db",
               "--n-trials", "14", "--k", "2", "--kb", "kb.json", "--header", "ks.h",
               "--no-progress")
    refused(run, "--k 2: no operator has 2 distinct good configs", "--k 1 or fewer")
    assert not (tmp_path / "kb.json").exists() and not (tmp_path / "ks.h").exists()
