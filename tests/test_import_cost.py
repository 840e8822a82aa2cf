"""What every aoe-tune process imports: scipy.stats costs about a second of CPU to
import and scipy.optimize a quarter of one; a study, a describe, an operator run or a
race needs neither, and GP-UCB (which brings scipy.optimize for its fit) no scipy.stats."""

from __future__ import annotations

import subprocess
import sys

# The modules a run, its race, its knowledge base, its summary and an operator's
# re-timing load.
ON_EVERY_RUN = ("aoe_optuna.cli.main", "aoe_optuna.study.storage.opening",
                "aoe_optuna.spec.loader", "aoe_optuna.certify.race", "aoe_optuna.operators.retime",
                "aoe_optuna.export.kb", "aoe_optuna.study.report.summary")
CODE = ("import sys\n" + "".join(f"import {m}\n" for m in ON_EVERY_RUN)
        + "print('scipy.stats' in sys.modules, 'scipy.optimize' in sys.modules)\n"
        + "import aoe_optuna.samplers.gp_ucb\n"
        + "print('scipy.stats' in sys.modules, 'scipy.special' in sys.modules)\n")


def test_no_module_a_run_loads_imports_scipy_stats_or_optimize() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    # a run: neither; GP-UCB: no scipy.stats, scipy.special (cheap) in its place
    assert out == ["False", "False", "False", "True"], out
