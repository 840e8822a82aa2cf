"""Where an operator run's wall-clock went: the chunks of its studies, in the order
they ran, and their build, queue and timing summed (:class:`TimeSplit`).

The tuner measures one chunk at a time, each on one operator's study, and waits
for it to finish before the next, so the run's trials in the order they started
fall into runs of one study each: those are its chunks (a chunk of the same study
twice in a row reads as one, and a build pool's clock then runs on through it).
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from optuna.trial import FrozenTrial

from aoe_optuna.study.run.time_split import TimeSplit


def chunks_of(studies: Sequence[Sequence[FrozenTrial]]) -> list[list[FrozenTrial]]:
    """Each study's trials cut into the chunks they ran in, in the run's order."""
    started = sorted(((t.datetime_start or datetime.min, i, t.number, t)
                      for i, trials in enumerate(studies) for t in trials),
                     key=lambda x: x[:3])
    chunks: list[list[FrozenTrial]] = []
    last = None
    for _, i, _, t in started:
        if i != last:
            chunks.append([])
            last = i
        chunks[-1].append(t)
    return chunks


def run_time_split(studies: Sequence[Sequence[FrozenTrial]], modelled: bool) -> TimeSplit:
    """The run's split: its chunks', summed (``modelled``: the simulator's clock)."""
    return TimeSplit.of_chunks(chunks_of(studies), modelled)
