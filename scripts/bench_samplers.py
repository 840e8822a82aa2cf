#!/usr/bin/env python
"""Sampler benchmark (see aoe_optuna.bench): samplers x spaces x seeds against exhaustive optima."""

import sys

from aoe_optuna.bench.command import main

if __name__ == "__main__":
    sys.exit(main())
