"""Leave each source out of the error bands in turn and count its figures inside the band.

Usage: python scripts/band_coverage.py

Reads the held-out rows aoe_optuna/calibration/bands.json stores (written by
scripts/error_bands.py), and for every kernel kind with two sources or more takes the
band without each source (aoe_optuna.calibration.band_coverage) and counts that
source's figures inside its 80th-percentile mark. Prints the table docs/SIMULATOR.md
quotes. Seconds: nothing is refitted or simulated.
"""

from __future__ import annotations

from aoe_optuna.calibration.band_coverage import leave_one_source_out, markdown
from aoe_optuna.calibration.band_table import stored_validation
from aoe_optuna.calibration.bands import shipped_document


def main() -> None:
    doc = shipped_document()
    print(f"bands.json of {doc['date']} ({doc['command']})")
    print("\n".join(markdown(leave_one_source_out(stored_validation(doc).rows))))


if __name__ == "__main__":
    main()
