"""Real ``aoe-tune export`` processes of different studies into one knowledge base at
once: every study's entries are kept, round after round, and no lock file is left."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.spec.format import read_document

ROOT = Path(__file__).resolve().parents[2]
AOE_TUNE = str(Path(sys.executable).parent / "aoe-tune")

# `aoe-tune export` started by a start file, so that the exports meet after their imports.
EXPORT_ON_START = """
import sys, time
from pathlib import Path
from aoe_optuna.cli.main import main
import aoe_optuna.export.from_study, aoe_optuna.study.create  # imported before the start
start = Path(sys.argv[1])
print("ready", flush=True)
while not start.exists():
    time.sleep(0.001)
sys.exit(main(sys.argv[2:]))
"""


@pytest.mark.slow  # 3 studies tuned, then 2 rounds of 3 export processes
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
                     "--n-trials", "2", "--sampler", "random", "--no-progress"]) == 0
    for round_ in range(2):
        kb, start = tmp_path / f"kb{round_}.json", tmp_path / f"start{round_}"
        procs = [subprocess.Popen([sys.executable, "-c", EXPORT_ON_START, str(start),
                                   "export", "--storage", url, "--study-name", name,
                                   "--kb", str(kb)], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True) for name in studies]
        for p in procs:
            assert p.stdout is not None and p.stdout.readline().strip() == "ready"
        start.touch()
        began = time.monotonic()
        outs = [p.communicate(timeout=300) for p in procs]
        assert [p.returncode for p in procs] == [0] * 3, [err for _, err in outs]
        held = KnowledgeBase.load(kb)
        assert len(held) == 15, f"round {round_}: {len(held)} of 15 entries kept"
        assert sorted({e["study"] for e in held}) == studies
        assert not (tmp_path / f".kb{round_}.json.lock").exists()
        assert time.monotonic() - began < 120
