"""K kernels per GEMM operator for a serving mix, and the ranges of M each serves."""
