"""Operator kinds: each family of problems an operator run tunes, as one module behind
one protocol (:mod:`.protocol`), and one registry (:mod:`.registry`).

Kinds: :mod:`.gemm`, :mod:`.decode_attention`, :mod:`.mla_attention`,
:mod:`.prefill_attention`, :mod:`.vector`, :mod:`.moe_gating`. The operator code
(:mod:`aoe_optuna.operators.layer_ops`, :mod:`.shapes`, the tuner, the report)
holds a kind and asks it; it never asks a problem what type it is.
"""
