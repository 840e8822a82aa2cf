"""A model of the cpu backend's C GEMM: cycles from what gcc makes of each config.

The cpu study's prior (decision 0045): the counterpart of the AI core
simulator for the C template (``templates/cpu_gemm.c``). It predicts no
absolute time (its scale and a fixed cost are fitted to the study's own
measurements, as the simulator's are on the chip); what it carries is the
order of configs, from the template's structure and the host's vector ISA
(``host_cpu.py``), not from any measurement:

* **Code the compiler makes** (gcc 12, the system compiler this was read
  from; clang, or a gcc that vectorises differently, would make the
  vectorisation rules below wrong). ``-O0`` keeps every variable on the
  stack and calls the address helpers; ``-O1`` does not vectorise; ``-O2``
  (the very-cheap cost model) vectorises only loops whose trip count is a
  compile-time multiple of the vector: the packed micro-kernel's ``TILE_N``
  loop, not the unpacked kernel's runtime ``nn``; ``-O3`` both, a
  column-major B read in place element by element (a load per lane, no
  faster than scalar code). Vector width and FMA come from ``schedule``:
  baseline x86-64 is SSE2 without FMA, the native schedules use the host's
  (``latency`` at 128 bits).
* **Where the accumulators live.** The packed micro-kernel's MR x TILE_N
  accumulators stay in registers across the K loop when ``-funroll-loops``
  unrolls the row and column loops (their trip counts are constants) and
  they fit beside a broadcast and a B vector; then a vector multiply-add
  costs only the FMA ports. ``-O3`` does not keep them: its loop interchange
  (gcc 8 on) puts the row loop outside the K loop, so every step of K loads
  and stores a row of accumulators (read in gcc 12.2's assembly of the
  template). Without registers each vector multiply-add loads and stores
  its accumulator and the ports allow about one per cycle.
* **Work around the inner loop.** Each micro-kernel call writes or adds its
  C rows (an add is a read, add and store per element, vectorised only at
  ``-O3``, where the trip count is runtime), so a short TILE_K pays it more
  often; A is packed again for every TILE_N column of blocks (a copy per
  row, one per block when blocked, an element at a time from column-major
  storage); the packed kernel computes whole MR rows and whole tiles,
  padding included.

Cache sizes do not enter: with the accumulators in registers a B vector
feeds MR multiply-adds, which the L2 delivers as readily as the L1; spilled,
the accumulators' own loads and stores bind first. Nor do ``unroll_factor``,
``l1_prefetch`` and ``output_align``, and ``pipeline`` 1 and 2 (double
buffering only moves when B is packed) and row-major against blocked
storage under packing (a copy per row against one per block, both at
copying speed) come out alike: the model ranks them level and leaves their
order to the measurements. Cycle costs per instruction are the usual
figures for a recent x86 core (two FMA ports, two load ports; Intel's
optimisation manual, Agner Fog's instruction tables): coarse, as only their
order reaches the prior.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

import numpy as np

from aoe_optuna.backends.cpu.host_cpu import HostCpu
from aoe_optuna.space.params import KNOWN_PARAMS, LAYOUTS, OPT_LEVELS, SCHEDULES, to_code
from aoe_optuna.workload.gemm import Gemm

MR = 4  # rows of C the packed micro-kernel computes together (the template's MR)
NOMINAL_HZ = 3.0e9  # cycles to seconds; the prior fits its own scale on top

# cycles per multiply-add at -O0: loop counters and accumulators go through the stack
# (a store-to-load forward, ~5 cycles, carried from one iteration to the next), and
# the unpacked kernel calls a_ptr/b_ptr (not inlined at -O0) for every operand
O0_CYCLES_PACKED = 6.0
O0_CYCLES_UNPACKED = 16.0
SCALAR_MADD_PER_CYCLE = 1.0  # accumulator load + B load on two load ports, one store
SPILLED_VECTOR_MADD_PER_CYCLE = 1.0  # the same per vector when the accumulators are in L1
# copying bytes L2 -> L1 with memcpy; an element-wise gather touches a line per element
COPY_BYTES_PER_CYCLE = 32.0
GATHER_CYCLES_PER_ELEMENT = 1.5
C_UPDATE_CYCLES_PER_ELEMENT = 1.0  # scalar load, add, store of C (one store a cycle)

_O0, _O1, _O2, _O3 = (OPT_LEVELS.index(x) for x in ("O0", "O1", "O2", "O3"))
_DEFAULT, _BALANCED, _THROUGHPUT, _LATENCY = (
    SCHEDULES.index(x) for x in ("default", "balanced", "throughput", "latency"))
_ROW, _COL, _Z = (LAYOUTS.index(x) for x in ("row_major", "col_major", "z_major"))


class CpuKernelModel:
    """Predicted time (s, nominal clock) of the cpu kernel for columns of configs."""

    def __init__(self, host: HostCpu) -> None:
        self.host = host

    def describe(self) -> str:
        return f"model of the cpu kernel ({self.host.describe()})"

    def latency(self, columns: Mapping[str, np.ndarray], gemm: Gemm) -> np.ndarray:
        """(n,) seconds for ``gemm`` under each config of ``columns`` (the space's numeric
        columns; a parameter the space lacks takes its default)."""
        n = max((np.size(v) for v in columns.values()), default=1)

        def col(name: str) -> np.ndarray:
            if name in columns:
                return np.broadcast_to(np.asarray(columns[name]), (n,)).astype(np.int64)
            return np.full(n, to_code(name, KNOWN_PARAMS[name].default), dtype=np.int64)

        return self._cycles(col, gemm) / NOMINAL_HZ

    def _cycles(self, col: Callable[[str], np.ndarray], gemm: Gemm) -> np.ndarray:
        host = self.host
        tm, tn, tk = (col(x).astype(float) for x in ("tile_m", "tile_n", "tile_k"))
        opt, schedule, layout = col("opt_level"), col("schedule"), col("layout")
        packed, quant = col("pipeline") > 0, col("quantization") > 0
        M, N, K = (float(gemm.M), float(gemm.N), float(gemm.K))
        elem_bytes = np.where(quant, 1.0, 4.0)

        # the instructions gcc picks (module docstring)
        native = (schedule == _THROUGHPUT) | (schedule == _LATENCY)
        lanes = np.where(schedule == _THROUGHPUT, host.native_lanes, 4).astype(float)
        fma = native & host.fma
        registers = np.where(native, host.native_registers, 16)
        unrolled = (schedule == _BALANCED) | (schedule == _THROUGHPUT)  # -funroll-loops
        vectorised = np.where(packed, opt >= _O2, (opt == _O3) & (layout != _COL))

        # vector multiply-adds a cycle at the ports: fp32 FMA on two ports, mul + add
        # sharing them without FMA; int32 products (pmulld, two uops) at half a vector,
        # emulated with pmuludq and shuffles where SSE4.1 is absent
        int_rate = np.where(native & host.sse41, 0.5, 0.25)
        port_rate = np.where(quant, int_rate, np.where(fma, 2.0, 1.0))
        rows_per_b = np.where(packed, MR, 1).astype(float)
        acc_vectors = rows_per_b * tn / lanes
        resident = (vectorised & packed & unrolled & (opt == _O2)
                    & (acc_vectors + 2 <= registers))
        vector_rate = np.where(resident, port_rate,
                               np.minimum(port_rate, SPILLED_VECTOR_MADD_PER_CYCLE))
        madd_per_cycle = np.where(vectorised, vector_rate * lanes, SCALAR_MADD_PER_CYCLE)
        madd_per_cycle = np.where(opt == _O0, 1.0 / np.where(packed, O0_CYCLES_PACKED,
                                                             O0_CYCLES_UNPACKED), madd_per_cycle)

        # the work the loops do, padding included (the packed kernel fills whole tiles
        # and whole MR row groups; the unpacked one stops at the edges)
        m_work = np.where(packed, np.ceil(M / MR) * MR, M)
        n_work = np.where(packed, np.ceil(N / tn) * tn, N)
        k_work = np.where(packed, np.ceil(K / tk) * tk, K)
        madd_cycles = m_work * n_work * k_work / madd_per_cycle

        # C rows written by the first K block, then added to once per later one: scalar
        # below -O3 (a runtime trip count); a write is a third of a read, add and store
        k_blocks = np.ceil(K / tk)
        c_update = M * N * (k_blocks - 2.0 / 3.0) * C_UPDATE_CYCLES_PER_ELEMENT
        c_update = np.where(opt == _O3, c_update / lanes, c_update)
        c_update = np.where(opt == _O0, c_update * O0_CYCLES_PACKED, c_update)

        # A packed again for every column of blocks; B once
        copy = elem_bytes / COPY_BYTES_PER_CYCLE
        a_cost = np.where(layout == _COL, GATHER_CYCLES_PER_ELEMENT, copy)
        b_cost = np.where(layout == _COL, GATHER_CYCLES_PER_ELEMENT, copy)
        a_elements = np.ceil(M / tm) * tm * k_work * np.ceil(N / tn)
        packing = a_elements * a_cost + k_work * n_work * b_cost
        # element loops at -O0 go through the stack as the inner loop does; memcpy does not
        packing = np.where((opt == _O0) & (layout == _COL), packing * O0_CYCLES_PACKED, packing)
        packing = np.where(packed, packing, 0.0)
        return madd_cycles + c_update + packing


def kernel_model() -> CpuKernelModel:
    """The model for this host."""
    return CpuKernelModel(HostCpu.this_host())
