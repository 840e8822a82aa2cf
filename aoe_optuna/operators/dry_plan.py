"""``aoe-tune operators --dry-run``: the studies a run would make, and on the npu backend
what times each attention, vector and gating kernel, without a toolkit and without
writing anything.

One line per operator: its study's name and what measures it (the run's backend for a
GEMM shape; the simulator's model, or on the npu backend the kind's program with its
command line). A kind the npu backend cannot time for a problem is one line saying why;
the run leaves it out and tunes the rest (:func:`aoe_optuna.operators.npu_layer.untimed`).
"""

from __future__ import annotations

from pathlib import Path

from aoe_optuna.backends.npu.commands import ARTIFACT, TimingArgs
from aoe_optuna.backends.npu.dry_run import dry_target
from aoe_optuna.backends.npu.kernel_program import ProgramUnavailable
from aoe_optuna.backends.registry import backend_options
from aoe_optuna.operators.layer_ops import check_backend, layer_operators
from aoe_optuna.operators.npu_layer import program_of
from aoe_optuna.operators.shapes import operator_shapes
from aoe_optuna.spec.loader import StudySpec


def dry_plan(spec: StudySpec, parent: str) -> list[str]:
    """The lines ``--dry-run`` prints for ``spec`` under the parent study ``parent``;
    a ValueError (one line) where the run would be refused."""
    name = spec.backend["name"]
    check_backend(spec.backend_kind, spec.workload)
    shapes = operator_shapes(spec.workload)
    ops = layer_operators(spec.workload)
    lines = [f"# operator run {parent}: backend {name}, {len(shapes)} GEMM shapes, "
             f"{len(ops)} attention/vector/gating kernels; nothing is written"]
    lines += [f"study {s.study_name(parent)}: gemm, measured by the {name} backend"
              for s in shapes]
    if spec.backend_kind.layer_kernels != "device":
        lines += [f"study {op.study_name(parent)}: {op.op_name}, measured by the simulator's "
                  "model" for op in ops]
        return lines
    target, notes = dry_target(backend_options(dict(spec.backend)))
    lines += notes
    timed = 0
    for op in ops:
        try:
            program = program_of(op, op.default_config(spec.profile), spec.profile, target)
        except ProgramUnavailable as exc:
            lines.append(f"{op.kind} {op.dims}: not timed on the npu backend: {exc}")
            continue
        timed += 1
        argv = program.argv(Path("<tree>") / ARTIFACT, TimingArgs(), 0)
        lines.append(f"study {op.study_name(parent)}: {op.op_name}, timed on the npu backend "
                     f"by {program.what}: {' '.join(argv)}")
    lines.append(f"# {timed} of {len(ops)} attention/vector/gating kernels timed on the "
                 "npu backend; `aoe-tune doctor --dry-run --config SPEC` writes their build "
                 "trees and prints every command")
    return lines
