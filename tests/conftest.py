"""Test set-up: tests import their helpers (kt_fixture, gp_ucb_fixtures) from this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
