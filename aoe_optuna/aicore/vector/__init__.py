"""The project's own vector-core kernels: the vector kernel of norms, SwiGLU and rope
(``vector_ops``, its instructions step by step in ``kernel_steps``) and the MoE router's
gating (``moe_gating``), each with its tiling space's best and default configs."""
