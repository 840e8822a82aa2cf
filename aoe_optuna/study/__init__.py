"""Running a study: the objective, the run loop and its budget, workers, recovery
of dead trials, storages, progress and the final report."""
