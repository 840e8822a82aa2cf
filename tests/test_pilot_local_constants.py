"""scripts/pilot_local_constants.py: local-move constants set from the environment, checked."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from aoe_optuna.samplers.reinforce import _local

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "pilot_local_constants.py"


def _run(setting: str, *args: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "AOE_PILOT_LOCAL": setting}
    return subprocess.run([sys.executable, str(SCRIPT), *args], env=env, cwd=ROOT,
                          capture_output=True, text=True, timeout=120)


def test_constants_are_set_in_the_module_the_sampler_reads() -> None:
    code = ("import runpy, sys; sys.argv = ['x']; "
            f"runpy.run_path({str(SCRIPT)!r}, run_name='pilot'); "
            "from aoe_optuna.samplers.reinforce import _local as m; "
            "print(m.CENTRES, m.CENTRE_DECAY, m.pick_centre.__defaults__, m.RING_DECAY)")
    env = {**os.environ, "AOE_PILOT_LOCAL": "CENTRES=8, CENTRE_DECAY=0.7"}
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True,
                         text=True, timeout=120, check=True).stdout.split()
    assert out == ["8", "0.7", "(8,)", str(_local.RING_DECAY)]  # the rest as shipped


def test_bad_settings_exit_2_in_one_line() -> None:
    for setting, want in [("CENTERS=8", "'CENTERS=8': expected NAME=NUMBER"),
                          ("CENTRES", "expected NAME=NUMBER"),
                          ("CENTRES=eight", "expected int VALUE"),
                          ("successes=1", "expected NAME=NUMBER")]:
        done = _run(setting, "--help")
        assert done.returncode == 2, setting
        err = done.stderr.strip()
        assert want in err and "\n" not in err, (setting, err)
