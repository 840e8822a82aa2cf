"""Write the simulator's error bands, by kernel kind, from its held-out validations.

Usage: python scripts/error_bands.py [--out PATH] [--date YYYY-MM-DD]

Runs every leave-one-source-out validation of aoe_optuna.calibration.held_out
(the GEMM model's refits take a few minutes), writes the bands with the rows and
each fold's constants to aoe_optuna/calibration/bands.json (or --out), and
prints the table docs/SIMULATOR.md quotes. A kind no validation covers is
written as unchecked.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from aoe_optuna.atomic_write import write_atomic
from aoe_optuna.calibration.band_table import document, markdown
from aoe_optuna.calibration.held_out import all_held_out

SHIPPED = Path(__file__).resolve().parents[1] / "aoe_optuna" / "calibration" / "bands.json"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", default=str(SHIPPED), help="where to write the JSON")
    p.add_argument("--date", default=None, help="the date to record (default today, UTC)")
    args = p.parse_args()
    doc = document(all_held_out(), args.date)
    write_atomic(args.out, json.dumps(doc, indent=1) + "\n")
    versions = ", ".join(f"{k} {v}" for k, v in doc["versions"].items())
    print(f"wrote {args.out} ({doc['date']}, {versions})")
    print("\n".join(markdown(doc)))


if __name__ == "__main__":
    main()
