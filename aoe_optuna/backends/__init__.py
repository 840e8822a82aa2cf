"""Backends build and time one config of a GEMM kernel. ``registry`` maps a spec's
backend name to its class; ``base`` declares the interface every backend implements."""
