"""Test set-up: tests import their helpers (kt_fixture, gp_ucb_fixtures) from this folder."""

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

# The recorded spaces (benchmark_hub:NAME) come from the local copies beside the
# checkout, which are the pinned files: tests never download (no network in CI).
# Without them, a download goes to a closed local port and fails at once: a test that
# needs a space it does not have skips (tests/recorded.py), and none waits on the network.
_SHARED_SPACES = Path(__file__).resolve().parents[2] / "shared" / "spaces"
if _SHARED_SPACES.is_dir():
    os.environ.setdefault("AOE_SPACES_DIR", str(_SHARED_SPACES))
os.environ.setdefault("AOE_BENCHMARK_HUB_URL", "http://127.0.0.1:9")


def pytest_configure(config: pytest.Config) -> None:
    """One torch thread in the test process, as the samplers take for their own work.

    Tests call the models' parts directly, outside the samplers' ``one_torch_thread``;
    on the shared 2-core machine, with another job running, torch's spinning thread
    pool made one such test (test_failed_builds_teach_the_model_to_move_away_from_them)
    take 15 s instead of 1.5 s.
    """
    import torch

    torch.set_num_threads(1)
