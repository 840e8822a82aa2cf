"""Operator kinds: each family of problems an operator run tunes, as one module behind
one protocol (:mod:`.protocol`).

A module here whose ``KIND`` names a ``problem_type`` is a kind: the registry
(:mod:`.registry`) finds it and pairs it with that type's line in the AI Core's list
of modelled problems; no other list names it. The GEMM's kind (:mod:`.gemm`) tunes
the spec's own problem; the attention kinds share :mod:`.attention`. The operator
code (:mod:`aoe_optuna.operators.layer_ops`, :mod:`.shapes`, the tuner, the report)
holds a kind and asks it; it never asks a problem what type it is.
"""
