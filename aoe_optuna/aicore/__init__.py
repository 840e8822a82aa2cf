"""The Ascend AI Core's timing models: what a kernel costs on a SoC, from its tiling.

Below the backends: the simulator backend measures GEMMs with :mod:`.gemm`; the spec
charges a step's untuned kernels, the operator kinds tune them and the calibration
checks them with the same models. Each model works on numpy columns (one row per
config) or one tiling, and takes every hardware figure from the
:class:`~aoe_optuna.hardware.profile.SocProfile`. Grouped by what they model:

- :mod:`.pipes`: what every kernel shares: the data movers and GM streaming
  (``transfer``), the cube's MMAD (``cube``), the vector unit and its copies
  (``vector_pipe``), and a kernel's launch head and cross-core hand-over (``launch``);
- :mod:`.gemm`: the tiled GEMM (``model``) and its parts: blocks and waves, the
  swizzle's schedule, operand layouts, HBM/L2 traffic, the pipes' overlap, scalar
  overhead, the vector passes around the cube, the GEMV kernel of a tiny N;
- :mod:`.attention`: fused decode (GQA/MQA), MLA decode and prefill attention, and the
  steps they share;
- :mod:`.vector`: the project's own vector kernels (norms, SwiGLU, rope) and MoE
  gating;
- :mod:`.cann`: CANN's library kernels as a deployment calls them (RmsNorm,
  AddRmsNorm, SwiGlu, the MLA decode of fused infer attention and its core split);
- :mod:`.layer_models`: every non-GEMM problem type with its model, the one list of
  them.

The single-core figures the fits use are :mod:`aoe_optuna.hardware.measured_core`'s;
the published timings the models are fitted to and checked against are
:mod:`aoe_optuna.calibration`'s.
"""
