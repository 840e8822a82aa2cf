"""Running a study's trials: the objective, the loop and its budget, the worker pool,
the build pool and device leases."""
