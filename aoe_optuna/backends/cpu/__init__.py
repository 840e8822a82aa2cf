"""The CPU backend: a real tiled C GEMM rendered per config, built with the system
compiler, timed in a separate process and checked against numpy."""
