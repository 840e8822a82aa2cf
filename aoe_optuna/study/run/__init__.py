"""Running a study's trials: the loop, the worker pool, the build pool and device leases."""
