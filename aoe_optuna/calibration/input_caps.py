"""How much input one ``aoe-tune calibrate`` takes, and why (the help and the refusals
say both).

Reading costs time with each row, and each distinct GEMM shape is simulated (a
library kernel's shape costs the best of the library space, about 28 ms), so
both are capped where a calibration still ends in well under a minute on a
2-core machine: a chip's own timings are one or a few per kernel, and a
model's GEMMs are tens of shapes.
"""

from __future__ import annotations

MAX_ROWS = 500_000
ROWS_WHY = "a calibration takes one timing per kernel, or a few"
MAX_SHAPES = 1_000
SHAPES_WHY = "each is simulated; a model's GEMMs are tens"
