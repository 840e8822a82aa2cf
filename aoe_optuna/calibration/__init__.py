"""Published timings and the validations that say how far the simulator can be trusted.

Figures measured by others live here with their sources; each validation
holds a source out, predicts it, and reports the error an unseen source can
expect, kept apart from any figure that set a constant.
"""
