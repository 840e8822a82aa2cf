#!/usr/bin/env bash
# The test command of the README and of CI: set up if needed, lint (ruff, and the
# package's layers with import-linter), run the suite. Arguments go to pytest, e.g.
# `bash scripts/test.sh -m "not slow"` for the fast tier.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
exec .venv/bin/python -m pytest -q -p no:cacheprovider "$@"
