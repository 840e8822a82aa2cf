"""CANN's library kernels as a deployment calls them, from their host tiling and kernel
passes: RmsNorm (``rms_norm``), AddRmsNorm (``add_rms_norm``), SwiGlu (``swiglu``), the
MLA decode of fused infer attention (``mla_decode``, its core split ``fia_split``), and
``library_vector``: the vector kernel a step's ``default`` charge prices."""
