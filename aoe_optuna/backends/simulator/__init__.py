"""The simulator backend (the default): a face over the AI Core's models.

``backend`` is the Backend: it reads a spec's options and measures a GEMM config with
:class:`aoe_optuna.aicore.gemm.model.GemmModel`; ``measurement_effects`` is what a
measurement on the chip would add to the model's latency (noise, its cost, hidden
failures, int8 accuracy). The models themselves, and those of the kernels beside the
GEMMs, are :mod:`aoe_optuna.aicore`'s.
"""
