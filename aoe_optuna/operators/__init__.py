"""Operator-by-operator tuning: one study per distinct problem of a workload.

An operator is a workload's distinct problem of any kind: a GEMM shape
(:mod:`.shapes`) or, where the spec tunes them, a decode, MLA decode or prefill
attention, a vector kernel (norm, SwiGLU, rope) or the MoE router's gating
(:mod:`.layer_ops`). What differs between kinds lives in one module per kind
behind one protocol (:mod:`.kinds`; :mod:`.kinds.registry` maps a problem or a
stored plan to its kind), so the code here holds a kind and never asks a
problem its type.

A scheduler spends one measurement budget over the operators by the end-to-end
gain it expects (:mod:`.scheduler`), new operators start from the configs of
neighbours already tuned and of the knowledge base (:mod:`.warm_start`), each
operator's study is driven through one interface (:mod:`.units`), each
winner is re-timed before it is stored (:mod:`.retime`), and the run's table,
knowledge base entries and kernels are written by :mod:`.outcome`.
"""
