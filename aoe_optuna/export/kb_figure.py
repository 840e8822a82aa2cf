"""What a knowledge base entry's value is a figure of, so that a merge compares like with like.

Three figures, one per kind of study that writes entries:

* a workload's step: ``objective`` "tokens/s" and ``workload`` the workload's name
  (a study that tunes one config for a model or a list of GEMMs; every shape of the
  workload gets the step's tokens/s). Two steps compare only as steps of one
  workload: a seq_len of 1,024 runs more tokens/s than one of 32,768 with the same
  GEMM configs. Entries written before ``workload`` was recorded have none and
  compare by their unit alone.
* a GEMM shape's own throughput: ``objective`` "TFLOPS" (a study of that one shape:
  an operator run's, or a spec with one GEMM), with the shape's ``latency_us``.
* an attention or vector kernel's rate: ``objective`` "calls/s".

A step's tokens/s and one GEMM's TFLOPS say nothing of each other, so the
knowledge base never lets one replace the other by value
(:meth:`aoe_optuna.export.kb.KnowledgeBase.merge`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

STEP_UNIT = "tokens/s"  # a workload's step
SHAPE_UNIT = "TFLOPS"  # one GEMM shape's own throughput
CALL_UNIT = "calls/s"  # one attention or vector kernel call

REPLACE_OPTION = "--kb-replace"  # the commands' option that replaces instead of refusing


def figure(entry: Mapping[str, Any]) -> str:
    """What the entry's value is, in words: ``tokens/s of a step of <workload>``..."""
    unit = entry.get("objective", STEP_UNIT)
    if unit == STEP_UNIT:
        workload = entry.get("workload")
        return (f"tokens/s of a step of {workload}" if workload
                else "tokens/s of a step (its workload not recorded)")
    if unit == SHAPE_UNIT:
        return "TFLOPS of the GEMM shape itself"
    if unit == CALL_UNIT:
        return "calls/s of the kernel"
    return repr(unit)


def not_comparable(held: Mapping[str, Any], new: Mapping[str, Any]) -> str | None:
    """Why the values of ``held`` and ``new`` (entries of one key) cannot be compared;
    None when they can."""
    held_unit, new_unit = (e.get("objective", STEP_UNIT) for e in (held, new))
    if held_unit != new_unit:
        return "another unit"
    held_load, new_load = held.get("workload"), new.get("workload")
    if held_unit == STEP_UNIT and held_load and new_load and held_load != new_load:
        return "the step of another workload"
    return None
