"""The tiled GEMM on the cube: :class:`~.model.GemmModel` and the parts it combines:
``geometry`` (blocks, waves, K steps), ``schedule`` (which blocks each core runs in the
swizzle's order), ``layout`` (how each operand's GM layout shapes its loads),
``traffic`` (HBM and L2 bytes), ``pipeline`` (how the pipes overlap), ``overhead``
(scalar and issue cost of compile options), ``vector_passes`` (split-K sums, int8
dequant and padding around the cube) and ``gemv`` (a tiny N on the vector cores)."""
