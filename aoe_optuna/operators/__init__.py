"""Operator-by-operator tuning: one study per distinct problem of a workload.

An operator is a workload's distinct GEMM shape (:mod:`.shapes`) or, where the
spec tunes them, its attention and vector kernel problems (:mod:`.layer_ops`).
What differs between kinds of problem lives in one module per kind behind one
protocol (:mod:`.kinds`: GEMM, decode, MLA decode and prefill attention, the
vector kernels; :mod:`.kinds.registry` maps a problem or a stored plan to its
kind), so the code here holds a kind and never asks a problem its type.

A scheduler spends one measurement budget over the operators by the end-to-end
gain it expects (:mod:`.scheduler`), new operators start from the configs of
neighbours already tuned and of the knowledge base (:mod:`.warm_start`), each
operator's study is driven through one interface (:mod:`.units`), and each
winner is re-timed before it is stored (:mod:`.retime`).
"""
