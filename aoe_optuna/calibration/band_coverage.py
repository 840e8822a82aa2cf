"""Does a stated band hold for a source it was not taken from? Leave each source out in turn.

For every kind with two sources or more, each source is left out of everything a band
is made of (its kind's figures and the spread between sources pooled over the kinds),
the kind's band is taken from what is left, and the left-out source's figures are
counted inside its 80th-percentile mark or not. A band honest about the spread between
sources covers about 80% of a new source's figures; one taken from sources that agree
more than the world does covers far fewer. ``scripts/band_coverage.py`` prints the
table from the rows ``bands.json`` stores.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from aoe_optuna.calibration.bands import bands, by_kind
from aoe_optuna.calibration.held_out import HeldOutRow


@dataclass(frozen=True)
class SourceCoverage:
    """One left-out source: its figures, how many fell inside the band taken without it."""

    kind: str
    source: str
    figures: int
    covered: int
    high: float  # the band's high mark taken without this source

    @property
    def share(self) -> float:
        return self.covered / self.figures


@dataclass(frozen=True)
class KindCoverage:
    kind: str
    sources: tuple[SourceCoverage, ...]

    @property
    def figures(self) -> int:
        return sum(s.figures for s in self.sources)

    @property
    def covered(self) -> int:
        return sum(s.covered for s in self.sources)

    @property
    def share(self) -> float:
        """Of the kind's figures, the share inside the band taken without their source."""
        return self.covered / self.figures

    @property
    def mean_source_share(self) -> float:
        """The same, each source weighing the same."""
        return sum(s.share for s in self.sources) / len(self.sources)


def leave_one_source_out(rows: Sequence[HeldOutRow]) -> list[KindCoverage]:
    """Every kind of two sources or more, each source left out in turn."""
    out = []
    for kind, kind_rows in by_kind(rows).items():
        sources = list(dict.fromkeys(r.source for r in kind_rows))
        if len(sources) < 2:
            continue
        per_source = []
        for source in sources:
            rest = [r for r in rows if not (r.kind == kind and r.source == source)]
            high = bands(rest)[kind].high
            assert high is not None  # the kind keeps at least one source
            held = [r for r in kind_rows if r.source == source]
            per_source.append(SourceCoverage(kind, source, len(held),
                                             sum(abs(r.error) <= high for r in held), high))
        out.append(KindCoverage(kind, tuple(per_source)))
    return out


def markdown(coverage: Sequence[KindCoverage]) -> list[str]:
    """The table docs/SIMULATOR.md quotes: each left-out source, then the kind."""
    out = ["| kind | left-out source | figures | band without it (80th pct) | inside |",
           "|---|---|---|---|---|"]
    for k in coverage:
        for s in k.sources:
            out.append(f"| {k.kind} | {s.source} | {s.figures} | ±{s.high:.1%} | "
                       f"{s.covered} ({s.share:.0%}) |")
        out.append(f"| **{k.kind}** | all, each left out | {k.figures} | | "
                   f"**{k.covered} ({k.share:.0%}); per source {k.mean_source_share:.0%}** |")
    return out
