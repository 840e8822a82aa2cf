"""This project's own Ascend C layer kernels: the vector kernels (RMSNorm, add +
RMSNorm, SwiGLU, rope; ``vector_kernel``) and the MoE gating (``moe_gating_kernel``),
each rendered from its tuned tiling (``tiling_point``) into one build tree with its ACL
host program (``program``); ``templates/`` holds the kernels and their host programs."""
