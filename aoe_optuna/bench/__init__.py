"""The sampler benchmark: samplers x spaces x seeds against exhaustive optima."""
