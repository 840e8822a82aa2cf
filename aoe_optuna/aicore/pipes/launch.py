"""What a kernel pays besides its pipes' work: starting it, and handing work between its
cube and vector cores. Every model takes these from here.

* ``KERNEL_LAUNCH_S``, the head of a cube-only kernel: starting every core and ending
  the task, whatever the tiling. catlass's bottleneck guide puts the full-core launch
  at 20-21 us; its own kernel timings need 7.79 us of head. The vector kernels' models
  (the project's and CANN's) charge it too.
* ``MIX_HEAD_S``: starting and ending the vector cores of a mixed kernel (a GEMM with
  a vector epilogue, a fused attention kernel) on top of that head.
* ``HANDOVER_S``: a cross-core flag (CrossCoreSetFlag / WaitFlag) and the vector
  pass's own prologue, per hand-over between the cube and the vector cores.

All three are fitted with the streaming constants (:mod:`.transfer`) to the published
910B GEMM timings by scripts/calibrate_simulator.py; a GEMM model reads them from this
module when it is built or run, so the calibration's leave-one-source-out can set them.
"""

from __future__ import annotations

KERNEL_LAUNCH_S = 7.79e-6
MIX_HEAD_S = 0e-6
HANDOVER_S = 4.19e-6
