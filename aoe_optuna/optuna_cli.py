"""``aoe-optuna``: Optuna's own CLI, with our samplers known to ``--sampler``.

``optuna ask --sampler X`` looks X up in the ``optuna.samplers`` namespace
only. This entry point puts our sampler classes there first, then hands over
to ``optuna.cli.main()``, so ``aoe-optuna ask --sampler GPUCBSampler ...``
works like any built-in sampler (the class reads the study's stored spec).
"""

from __future__ import annotations

import sys

import optuna
import optuna.cli

from aoe_optuna.samplers.registry import OPTUNA_CLI_NAMES, UnknownSamplerError, sampler_class


def register_samplers() -> list[str]:
    """Expose our sampler classes as ``optuna.samplers.<Name>``; return those registered."""
    done = []
    for cli_name, registry_name in OPTUNA_CLI_NAMES.items():
        try:
            cls = sampler_class(registry_name)
        except UnknownSamplerError:
            continue
        setattr(optuna.samplers, cli_name, cls)
        done.append(cli_name)
    return done


def main() -> int:
    register_samplers()
    return int(optuna.cli.main() or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
