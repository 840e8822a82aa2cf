"""Test set-up: tests import their helpers (pg_server) from this folder."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
