"""Attention and vector kernel models against published 910B timings, source by source.

Prints every figure (published, the model's kernel time, the time as its source
timed it, the ratio), the per-source held-out summary, the rows that carry
kernel time (published well above the host's dispatch floor), the figures that
fit a floor apart from those that only check, the per-kind held-out median
|error| and the ranking pairs kept, and, apart from all of these, the figures a
model was changed after (``seen``: in-sample, never in a band).

    .venv/bin/python scripts/validate_layer_ops.py
"""

from __future__ import annotations

import argparse
from statistics import median

from aoe_optuna.calibration.layer_ops_validation import (
    RANK_GAP,
    RISEN,
    Row,
    band_rows,
    by_source,
    checks,
    held_out_errors,
    ranking_pairs,
    seen,
    simulate,
    summarise,
)
from aoe_optuna.calibration.published_layer_ops import NOT_USED, SOURCES


def _shape(row: Row) -> str:
    return ", ".join(f"{k} {v}" for k, v in row.figure.shape.items())


def _table(rows: list[Row]) -> None:
    print("| source | kernel | host | shape | published us | kernel us | simulated us | ratio |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        f = r.figure
        print(f"| {f.source} | {f.kernel} ({f.tiling}) | {f.host or '-'} | {_shape(r)} "
              f"| {f.time_us:.1f} | {r.kernel_us:.1f} | {r.simulated_us:.1f} "
              f"| {r.simulated_us / f.time_us:.2f} |")


def _summary_table(summaries: list) -> None:
    print("| group | figures | median abs(ratio - 1) | worst | median ratio |")
    print("|---|---|---|---|---|")
    for s in summaries:
        print(f"| {s.label} | {s.figures} | {100 * s.median_error:.1f}% "
              f"| {100 * s.worst_error:.1f}% | {s.median_ratio:.2f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print every figure's row")
    args = parser.parse_args()
    rows = simulate()
    fit = [r for r in rows if r.figure.role == "fit"]
    held = checks(rows)

    print("## Figures that fit a constant (each sets its timing host's dispatch floor)\n")
    _table(fit)
    if args.rows:
        print("\n## Figures that only check\n")
        _table(held)

    print("\n## Held out, per source (check rows; no chip constant was fitted to any source,"
          " so each source is predicted as if left out)\n")
    _summary_table(by_source(rows))
    risen = band_rows(rows)
    print(f"\nRows carrying kernel time (kernel-only timings, or published > {RISEN:.2f} x "
          "the host floor):\n")
    _summary_table([summarise("kernel-carrying checks", risen)])

    print("\n## Held out, per kind\n")
    print("| kind | figures | median abs(ratio - 1) |")
    print("|---|---|---|")
    seen_by_kind: dict[str, int] = {}
    for r in seen(rows):
        seen_by_kind[r.figure.kind] = seen_by_kind.get(r.figure.kind, 0) + 1
    for kind, errors in held_out_errors(rows).items():
        cell = (f"{100 * median(errors):.1f}%" if errors
                else f"none held out ({seen_by_kind[kind]} seen)" if kind in seen_by_kind
                else "no published figure found")
        print(f"| {kind} | {len(errors)} | {cell} |")
    every = [r.error for r in held]
    kept, total = ranking_pairs(rows)
    print(f"\nAll {len(held)} check figures: median {100 * median(every):.1f}%; "
          f"ranking pairs (published > {RANK_GAP:.0%} apart, same source, kernel, host) "
          f"kept {kept} of {total}")
    seen_rows = seen(rows)
    if seen_rows:
        print("\n## Seen: figures a model was changed after (in-sample; no band)\n")
        if args.rows:
            _table(seen_rows)
            print()
        groups: dict[str, list[Row]] = {}
        for r in seen_rows:
            groups.setdefault(f"{r.figure.source} {r.figure.kernel}", []).append(r)
        _summary_table([summarise(k, v) for k, v in groups.items()])
    print("\nsources:")
    for key, citation in SOURCES.items():
        print(f"  {key}: {citation}")
    print("not used:")
    for where, why in NOT_USED:
        print(f"  {where}: {why}")


if __name__ == "__main__":
    main()
