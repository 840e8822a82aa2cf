"""Published timings the simulator is fitted to and checked against, and the fits."""
