"""The search space: parameters, constraint expressions, and the SearchSpace that
enumerates, samples and encodes configs. Knows nothing of hardware or backends."""
