"""Operator-by-operator tuning: one study per distinct GEMM shape of a workload.

A scheduler spends one measurement budget over the shapes by the end-to-end
gain it expects (:mod:`.scheduler`), new shapes start from the configs of
shapes already tuned and of the knowledge base (:mod:`.warm_start`), and each
shape's winner is re-timed before it is stored (:mod:`.retime`).
"""
