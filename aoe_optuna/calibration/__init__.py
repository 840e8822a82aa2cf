"""How far to trust a simulated figure, and a user's chip fitted to its own timings.

Between the spec and the backends: it reads the simulator's models and the
published timings they are validated against, and the spec, the reports and
the command line read its bands and calibrated profiles.
"""
