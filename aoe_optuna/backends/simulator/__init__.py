"""The simulator backend: an analytical model of the Ascend AI Core (the default).

``backend`` is the Backend; each other module computes one physical term on
numpy columns (one row per config): ``geometry`` (blocks, waves, padding),
``traffic`` (HBM and L2 bytes), ``transfer`` (per-instruction costs of the
data movers), ``cube`` (MMAD cycles), ``overhead`` (scalar/issue cost of
compile options), ``pipeline`` (how the pipes overlap), ``measure`` (noise,
measurement cost, hidden failures, int8 accuracy).
"""
