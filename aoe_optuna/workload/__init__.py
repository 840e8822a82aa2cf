"""GEMM problems and model workloads, and how their latencies become tokens/s."""
