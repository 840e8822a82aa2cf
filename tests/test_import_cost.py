"""What every aoe-tune process imports: scipy.stats costs about a second of CPU to
import, and a study, a describe, an operator run or a race needs none of it."""

from __future__ import annotations

import subprocess
import sys

# The modules a run, its race, its GP-UCB targets and an operator's re-timing load.
ON_EVERY_RUN = ("aoe_optuna.cli.main", "aoe_optuna.study.storage.opening", "aoe_optuna.spec.loader",
                "aoe_optuna.certify.race", "aoe_optuna.operators.retime",
                "aoe_optuna.samplers.gp_ucb._targets", "aoe_optuna.calibration.leave_one_source_out")


def test_no_module_a_run_loads_imports_scipy_stats() -> None:
    code = ("import sys\n" + "".join(f"import {m}\n" for m in ON_EVERY_RUN)
            + "print('scipy.stats' in sys.modules, 'scipy.special' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    assert out == ["False", "True"], out  # scipy.special (cheap) is what they use instead
