"""What every aoe-tune process imports: scipy.stats costs about a second of CPU to
import, scipy.optimize a quarter of one and torch with BoTorch two; a study, a describe,
an operator run or a race needs none of them, and GP-UCB loads no scipy.stats, and
torch, scipy.optimize and scipy.special (~0.1 s) only at its first fit: a run that ends
within the space-filling start never does."""

from __future__ import annotations

import subprocess
import sys

# The modules a run, its race, its knowledge base, its summary and an operator's
# re-timing load.
ON_EVERY_RUN = ("aoe_optuna.cli.main", "aoe_optuna.study.storage.opening",
                "aoe_optuna.spec.loader", "aoe_optuna.certify.race", "aoe_optuna.operators.retime",
                "aoe_optuna.export.kb", "aoe_optuna.study.report.summary")
CODE = ("import sys\n" + "".join(f"import {m}\n" for m in ON_EVERY_RUN)
        + "print('scipy.stats' in sys.modules, 'scipy.optimize' in sys.modules,"
        " 'scipy.special' in sys.modules)\n"
        + "import aoe_optuna.samplers.gp_ucb\n"
        + "print('scipy.stats' in sys.modules, 'scipy.optimize' in sys.modules,"
        " 'torch' in sys.modules, 'scipy.special' in sys.modules)\n")


def test_a_run_and_gp_ucbs_start_load_no_scipy_stats_optimize_or_torch() -> None:
    out = subprocess.run([sys.executable, "-c", CODE], capture_output=True, text=True,
                         timeout=120, check=True).stdout.split()
    # a run: none (a race loads scipy.special at its first quantile); GP-UCB's start: none
    assert out == ["False", "False", "False", "False", "False", "False", "False"], out


def _torch_in_a_bench_worker() -> tuple[bool, int]:
    loaded = "torch" in sys.modules
    import torch

    return loaded, torch.get_num_threads()


def test_a_bench_worker_loads_torch_only_when_its_sampler_does_and_on_one_thread() -> None:
    import multiprocessing as mp
    from concurrent.futures import ProcessPoolExecutor

    from aoe_optuna.bench.seed_run import _init_worker

    with ProcessPoolExecutor(1, mp_context=mp.get_context("spawn"),
                             initializer=_init_worker) as pool:
        assert pool.submit(_torch_in_a_bench_worker).result(timeout=120) == (False, 1)
