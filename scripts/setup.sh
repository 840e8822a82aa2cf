#!/usr/bin/env bash
# Set up .venv with everything aoe_optuna needs (idempotent; about a minute).
# torch is installed first and pinned: a CPU wheel of torch 2.13.0 is what we
# test with; an unpinned torch would pull a multi-GB CUDA build.
# A venv set up from the same pyproject.toml and constraints.txt is left as it is
# (a stamp in .venv records their digest), so the tests also run on a machine
# that is offline once set up: pip would otherwise reach the index to build the
# editable install again.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), "aoe_optuna needs Python 3.11+"'
STAMP=.venv/.aoe-setup
WANT=$(cat pyproject.toml constraints.txt | sha256sum | cut -d' ' -f1)
if [ -x .venv/bin/python ] && [ "$(cat "$STAMP" 2>/dev/null)" = "$WANT" ] \
    && .venv/bin/python -c 'import aoe_optuna' 2>/dev/null; then
  exit 0
fi
[ -x .venv/bin/python ] || "$PY" -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check torch==2.13.0
# constraints.txt pins the numerical libraries the benchmark figures were measured
# with; where this machine's package index lacks one of them, install without it.
if ! .venv/bin/python -m pip install -q --disable-pip-version-check -c constraints.txt -e '.[dev]'; then
  echo "setup: warning: constraints.txt could not be met; installing unpinned" \
       "(benchmark figures may not reproduce bit for bit)" >&2
  .venv/bin/python -m pip install -q --disable-pip-version-check -e '.[dev]'
fi
echo "$WANT" > "$STAMP"
echo "set up: $(.venv/bin/python -c 'import aoe_optuna, optuna, torch; print("optuna", optuna.__version__, "torch", torch.__version__)')"
