"""A run writes its dashboard note and plot without importing the dashboard's server."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SPEC = ROOT / "studies" / "qwen25_7b_decode_910b2.json"

RUN = """
import sys
from aoe_optuna.cli.main import main
code = main(["--config", sys.argv[1], "--storage", sys.argv[2], "--study-name", "w",
             "--n-trials", "3", "--sampler", "random", "--seed", "0", "--no-progress"])
heavy = sorted(m for m in ("optuna_dashboard", "torch", "sklearn") if m in sys.modules)
print("imported:", ",".join(heavy) or "none")
sys.exit(code)
"""


def test_run_writes_note_and_plot_without_the_dashboard_server(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'w.db'}"
    proc = subprocess.run([sys.executable, "-c", RUN, str(SPEC), url],
                          capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "imported: none" in proc.stdout  # 2.7 s of torch and scikit-learn per run
    import optuna
    import optuna_dashboard  # the public reader: the note is the dashboard's own format

    study = optuna.load_study(study_name="w", storage=url)
    assert "Best config" in optuna_dashboard.get_note(study)
    keys = optuna.storages.get_storage(url).get_study_system_attrs(study._study_id)
    assert any(k.startswith("dashboard:plot_data:convergence") for k in keys)
