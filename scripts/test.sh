#!/usr/bin/env bash
# The test command of the README and of CI: set up if needed, lint, run the suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
