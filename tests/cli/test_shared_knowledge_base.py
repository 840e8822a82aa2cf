"""``aoe-tune export`` in real processes, of different studies, into one knowledge base at
once: every study's entries are kept, round after round, and no lock file is left."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.spec.format import read_document

ROOT = Path(__file__).resolve().parents[2]
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")

# `aoe-tune export` of one study, once per round: round r starts when the file start<r>
# appears and writes kb<r>.json; one process for all rounds, imported before the first.
EXPORT_ROUNDS = """
import sys, time
from pathlib import Path
import aoe_optuna.export.from_study, aoe_optuna.study.create, aoe_optuna.study.storage.opening
from aoe_optuna.cli.main import main
folder, rounds, argv = Path(sys.argv[1]), int(sys.argv[2]), sys.argv[3:]
print("ready", flush=True)
for r in range(rounds):
    while not (folder / f"start{r}").exists():
        time.sleep(0.001)
    print(f"done {main([*argv, '--kb', str(folder / f'kb{r}.json')])}", flush=True)
"""


def _last_line_of_round(proc: subprocess.Popen[str]) -> str:
    """Read the export's lines (one per entry) up to its "done <exit code>" line."""
    assert proc.stdout is not None
    line = proc.stdout.readline()
    while line and not line.startswith("done "):
        line = proc.stdout.readline()
    return line.strip()


@pytest.mark.slow  # 3 studies tuned, then 3 export processes meeting in 3 rounds
def test_exports_of_different_studies_at_once_keep_every_entry(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path}/aoe.db"
    doc = read_document(str(ROOT / "studies" / "qwen25_7b_decode_910b2.json"))
    studies = []
    for i, m in enumerate((16, 32, 64)):  # five GEMM shapes a study: five entries each
        doc["workload"] = {"shapes": [{"M": m, "K": 512 * (j + 1), "N": 512, "dtype": "fp16"}
                                      for j in range(5)]}
        spec = tmp_path / f"spec{i}.json"
        spec.write_text(json.dumps(doc))
        studies.append(f"study-{i}")
        assert main(["--config", str(spec), "--storage", url, "--study-name", studies[-1],
                     "--n-trials", "1", "--sampler", "random", "--no-progress"]) == 0
    rounds = 3
    procs = [subprocess.Popen([sys.executable, "-c", EXPORT_ROUNDS, str(tmp_path), str(rounds),
                               "export", "--storage", url, "--study-name", name],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
             for name in studies]
    try:
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        for r in range(rounds):
            (tmp_path / f"start{r}").touch()
            for p in procs:
                assert _last_line_of_round(p) == "done 0"
            held = KnowledgeBase.load(tmp_path / f"kb{r}.json")
            assert len(held) == 15, f"round {r}: {len(held)} of 15 entries kept"
            assert sorted({e["study"] for e in held}) == studies
            assert not (tmp_path / f".kb{r}.json.lock").exists()
    finally:
        for p in procs:
            p.kill()
            p.communicate()
