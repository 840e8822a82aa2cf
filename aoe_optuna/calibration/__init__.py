"""How far to trust a simulated figure, and a user's chip fitted to its own timings.

Published timings live here with their sources; each validation holds a source
out, predicts it, and reports the error an unseen source can expect, kept
apart from any figure that set a constant. The bands come from those held-out
errors, never from a fit; `aoe-tune calibrate` fits a chip's own timings into
a profile. Between the spec and the backends: it reads the simulator's models,
and the reports and the command line read its bands and profiles.
"""
