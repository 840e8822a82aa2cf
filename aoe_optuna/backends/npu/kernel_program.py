"""One layer kernel as the npu backend builds and times it: its build tree, its build
commands and the problem part of its program's command line.

Every operator kind renders its own :class:`KernelProgram` (the kind's module, through
:meth:`aoe_optuna.operators.kinds.protocol.LayerKind.npu_program`); the backend builds it
through the build cache and runs it the one way it runs the GEMM's program
(:meth:`aoe_optuna.backends.npu.backend.NpuBackend.measure_program`). Every host
program takes the same timing arguments after its problem arguments
(:func:`timing_arguments`) and prints the GEMM's ``AOE_RESULT`` line, so one reader
(:mod:`.results`) and one timing policy (``backends/timing.py``, in
``templates/aoe_bench_common.h``) serve every kind.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from aoe_optuna.backends.npu.cann import CannToolkit
from aoe_optuna.backends.npu.commands import TimingArgs


class ProgramUnavailable(ValueError):
    """The npu backend cannot time a problem whatever the tiling: one line saying why (a
    problem its kernel lacks, a run mode its host program lacks, no catlass checkout)."""


@dataclass(frozen=True)
class NpuTarget:
    """Where a kind's program is built and run: what its build commands depend on.
    ``catlass`` is the checkout (None where none was found: catlass kinds then name
    ``$CATLASS_HOME`` in their commands and refuse to build)."""

    toolkit: CannToolkit
    run_mode: str
    catlass: Path | None = None
    catlass_build_system: str = "asc"
    catlass_revision: str = "unknown"


@dataclass(frozen=True)
class KernelProgram:
    """A kind's kernel with its host program: everything one measurement builds and runs."""

    files: dict[str, str]  # file name -> text of the build tree
    build: list[list[str]]  # the build commands, run in the tree
    executable: str  # the program, relative to the installed tree ``out`` (bin/<name>)
    problem_args: list[str]  # its arguments before the timing arguments
    toolchain: str  # what besides the files and commands keys the build cache
    what: str  # one line: the kernel and the public source it is built from
    run_modes: tuple[str, ...] = ("npu", "sim")  # where its host program runs
    notes: tuple[str, ...] = field(default=())  # lines a dry run prints (no counterparts...)

    def argv(self, installed: Path, timing: TimingArgs, device: int) -> list[str]:
        """The program's command line (``installed``: the tree's ``out``) with the timing
        arguments every host program takes."""
        return [str(installed / self.executable), *self.problem_args,
                *timing_arguments(timing, device)]


def timing_arguments(timing: TimingArgs, device: int) -> list[str]:
    """The tail of every host program's command line (the GEMM's, after M K N)."""
    return [str(int(timing.warmup)), str(int(timing.launches)), str(int(timing.min_samples)),
            str(int(timing.max_samples)), repr(float(timing.rel_precision)),
            repr(float(timing.max_seconds)), str(int(device))]
