"""The replay backend: measurements served from a recorded Kernel Tuner cache file."""
