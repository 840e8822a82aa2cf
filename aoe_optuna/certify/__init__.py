"""Certifying a winner among noisy timings: pure statistics over arrays of costs.

The best of many noisy measurements won partly by luck. These modules decide,
from re-timings taken in interleaved rounds, which candidate is the winner, with
what interval, which candidates tie with it within epsilon, and how likely the
selection is right; the study and the operator run drive the re-timings and store
them (:mod:`aoe_optuna.study.race`, :mod:`aoe_optuna.operators.tuner`).
Procedure and measurement: docs/decisions/0031-certified-winner-race.md.
"""
