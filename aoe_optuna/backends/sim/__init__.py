"""Parts of the analytical Ascend AI Core model behind :mod:`aoe_optuna.backends.simulator`.

Each module computes one physical term on numpy columns (one row per config):
``geometry`` (blocks, waves, padding), ``traffic`` (HBM and L2 bytes),
``transfer`` (per-instruction costs of the data movers), ``cube`` (MMAD
cycles), ``overhead`` (scalar/issue cost of compile options), ``pipeline``
(how the pipes overlap), ``measure`` (noise, measurement cost, hidden
failures, int8 accuracy).
"""
