#!/usr/bin/env bash
# Build the wheel and the sdist, install each in a fresh venv (the runtime
# dependencies only, within constraints.txt) and run a smoke test there: the
# import, the entry points, and a 5-trial study from a spec on the simulator.
# Catches what an editable install hides: missing package data, a dependency
# only the dev extra brought, a module left out of the build.
# Usage: bash scripts/check_dist.sh [WORKDIR]   (about 2 minutes; needs the package index)
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
WORK=${1:-$(mktemp -d)}
mkdir -p "$WORK"
PY=${PYTHON:-python3}
[ -x .venv/bin/python ] || bash scripts/setup.sh >/dev/null
.venv/bin/python -m build --outdir "$WORK/dist" . >"$WORK/build.log" 2>&1 \
  || { tail -20 "$WORK/build.log"; exit 1; }
cat >"$WORK/spec.json" <<'JSON'
{"search_space": {"tile_m": [16, 64, 256], "tile_k": [16, 64, 256], "tile_n": [16, 64, 256],
 "pipeline": [0, 2], "l1_prefetch": [0, 1], "output_align": [0, 1]}}
JSON
for dist in "$WORK"/dist/*.whl "$WORK"/dist/*.tar.gz; do
  kind=$([[ $dist == *.whl ]] && echo wheel || echo sdist)
  venv="$WORK/venv-$kind"
  rm -rf "$venv"
  "$PY" -m venv "$venv"
  pip=("$venv/bin/python" -m pip install -q --disable-pip-version-check)
  "${pip[@]}" torch==2.13.0 2>&1 | grep -v '^WARNING: Location' || true
  "${pip[@]}" -c "$ROOT/constraints.txt" "$dist" 2>&1 | grep -v '^WARNING: Location' || true
  (
    cd "$WORK"  # away from the source tree, so the installed copy is what runs
    "$venv/bin/python" -c 'import aoe_optuna.cli.main, aoe_optuna.samplers.registry'
    "$venv/bin/aoe-tune" --help >/dev/null
    "$venv/bin/aoe-optuna" --help >/dev/null
    "$venv/bin/aoe-tune" --config spec.json --n-trials 5 \
      --storage "sqlite:///$WORK/$kind.db" >"$WORK/$kind-study.log" 2>&1 \
      || { tail -20 "$WORK/$kind-study.log"; exit 1; }
    n=$("$venv/bin/python" -c "import optuna; s=optuna.load_study(study_name=None, storage='sqlite:///$WORK/$kind.db'); print(sum(t.state.name == 'COMPLETE' for t in s.trials))")
    [ "$n" -ge 5 ] || { echo "check_dist: $kind: $n complete trials, expected 5"; exit 1; }
  )
  echo "check_dist: $kind $(basename "$dist"): installed in a fresh venv, smoke test passed"
done
