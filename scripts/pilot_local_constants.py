"""Run the sampler bench with constants of the local moves changed, for pilots.

The local moves' constants (``aoe_optuna.samplers.reinforce._local``:
CENTRES, CENTRE_DECAY, RING_DECAY, SMOOTH_DECAY, ...) are module constants,
not sampler options. A pilot sets them in the environment, so that the
bench's worker processes (spawned, not forked) set them too:

    AOE_PILOT_LOCAL="CENTRES=8,CENTRE_DECAY=0.7" python scripts/pilot_local_constants.py \\
      --space studies/qwen25_7b_decode_910b2.json \\
      --sampler 'reinforce:{"policy": "studies/policies/qwen_holdout_seed.pt"}' \\
      --seeds 80 --budgets 100 --jobs 2 --kernel-tuner '' --out /tmp/w/pilot_c8

Every argument goes to ``bench_samplers.py``. The runs keep the sampler's
label, so compare them with ``compare_runs.py --a-runs <pilot> --b-runs <shipped>``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from aoe_optuna.samplers.reinforce import _local  # noqa: E402

ENV = "AOE_PILOT_LOCAL"


def apply(setting: str) -> dict[str, float]:
    """Set the ``NAME=VALUE,...`` constants on ``_local``; ValueError names a bad one."""
    done: dict[str, float] = {}
    for item in filter(None, (s.strip() for s in setting.split(","))):
        name, sep, value = item.partition("=")
        current = getattr(_local, name, None)
        if not sep or not name.isupper() or not isinstance(current, int | float):
            raise ValueError(f"{ENV}: {item!r}: expected NAME=NUMBER with NAME a constant of "
                             f"{_local.__name__}")
        try:
            number = type(current)(value)
        except ValueError:
            raise ValueError(f"{ENV}: {item!r}: expected {type(current).__name__} VALUE") from None
        setattr(_local, name, number)
        done[name] = number
    if "CENTRES" in done:  # pick_centre's default was bound when the module loaded
        _local.pick_centre.__defaults__ = (int(done["CENTRES"]),)
    return done


try:
    SET = apply(os.environ.get(ENV, ""))
except ValueError as exc:
    print(f"error: {exc}", file=sys.stderr)
    raise SystemExit(2) from None

if __name__ == "__main__":
    from aoe_optuna.bench.command import main

    print(f"local-move constants: {SET or 'as shipped'}", file=sys.stderr)
    raise SystemExit(main(sys.argv[1:]))
