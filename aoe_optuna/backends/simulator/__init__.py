"""The simulator backend: an analytical model of the Ascend AI Core (the default).

``backend`` is the Backend. Each other module computes one part of the model
on numpy columns (one row per config):

- a GEMM on the cube: ``geometry`` (blocks, waves, padding), ``schedule``
  (which blocks each core runs, the slowest core), ``layout`` (how each
  operand's GM layout shapes its loads), ``traffic`` (HBM and L2 bytes),
  ``transfer`` (per-instruction costs of the data movers, GM streaming),
  ``cube`` (MMAD cycles), ``vector_passes`` (split-K sums, int8 dequant and
  padding around the cube), ``gemv`` (a tiny N on the vector cores),
  ``overhead`` (scalar/issue cost of compile options), ``pipeline`` (how the
  pipes overlap);
- the kernels beside the GEMMs, one module per problem, listed in
  ``layer_models``: ``decode_attention``, ``mla_attention``,
  ``prefill_attention`` (their shared stages in ``attention_steps``),
  ``vector_ops`` (norm, SwiGLU, rope) and ``moe_gating`` (the MoE router);
- ``measurement_effects``: what a measurement adds (noise, its cost, hidden
  failures, int8 accuracy).

The single-core figures the fits use are :mod:`aoe_optuna.hardware.measured_core`'s;
the published timings the model is fitted to and checked against, and the
fits' residuals, are :mod:`aoe_optuna.calibration`'s.
"""
