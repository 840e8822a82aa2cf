#!/usr/bin/env bash
# The test command of the README and of CI: set up if needed, lint (ruff, and the
# package's layers with import-linter), run the suite. Arguments go to pytest, e.g.
# `bash scripts/test.sh -m "not slow"` for the fast tier, `-n 0` for one process.
# Two pytest-xdist workers: most slow tests wait on aoe-tune processes, servers and
# pauses, so two share a 2-core machine well; worksteal hands a worker that ran out
# part of the other's queue, so a long test near the end does not leave one idle.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
.venv/bin/ruff check .
.venv/bin/lint-imports --no-cache >/dev/null || .venv/bin/lint-imports --no-cache
# The suite starts hundreds of aoe-tune processes: where PYTHONDONTWRITEBYTECODE is set
# each would compile the package anew (~0.2 s of CPU each) and each pytest worker would
# rewrite every test module again; the caches land in the ignored __pycache__ folders.
unset PYTHONDONTWRITEBYTECODE
exec .venv/bin/python -m pytest -q -p no:cacheprovider -n 2 --dist worksteal "$@"
