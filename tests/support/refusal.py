"""What a refused aoe-tune process shows: one line on stderr, exit 2, no traceback."""

from __future__ import annotations

import subprocess


def refused(run: subprocess.CompletedProcess[str], *needles: str) -> str:
    """The process's one-line refusal, each needle in it."""
    err = run.stderr.strip()
    assert run.returncode == 2, (run.returncode, run.stdout, err)
    assert len(err.splitlines()) == 1 and "Traceback" not in err, err
    for needle in needles:
        assert needle in err, (needle, err)
    return err
