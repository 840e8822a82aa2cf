"""Print size, feasible count, exhaustive optimum, baseline and roofline fraction of specs.

    python scripts/describe_studies.py                # every shipped simulator study
    python scripts/describe_studies.py studies/x.json # given specs
"""

from __future__ import annotations

import sys
from pathlib import Path

from aoe_optuna.cli.main import main

if __name__ == "__main__":
    root = Path(__file__).resolve().parents[1]
    specs = sys.argv[1:] or [
        str(p.relative_to(root)) for p in sorted((root / "studies").glob("*.json"))
        + sorted((root / "studies").glob("*.toml"))
    ]
    sys.exit(main(["describe", *specs]))
