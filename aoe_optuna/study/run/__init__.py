"""Running trials: the objective, the run loop and its budget, the pool of worker processes."""
