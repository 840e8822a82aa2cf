"""``aoe-optuna``: Optuna's own CLI, with our samplers known to ``--sampler``.

``optuna ask --sampler X`` looks X up in the ``optuna.samplers`` namespace
only. This entry point puts our sampler classes there first, then hands over
to ``optuna.cli.main()``, so ``aoe-optuna ask --sampler GPUCBSampler ...``
works like any built-in sampler (the class reads the study's stored spec), and
``ask`` on an aoe-tune study takes its search space from the stored spec.
"""

from __future__ import annotations

import json
import sys

import optuna
import optuna.cli
from optuna.distributions import distribution_to_json

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


def with_stored_search_space(argv: list[str]) -> list[str]:
    """``ask`` without ``--search-space`` on a study made by aoe-tune: use its stored space.

    Optuna's ``ask`` suggests nothing unless it is given the distributions; an
    aoe-tune study carries them in its spec, so the user need not spell them out.
    """
    if not argv or argv[0] != "ask" or "--search-space" in argv:
        return argv
    opts = _options(argv)
    if "--storage" not in opts or "--study-name" not in opts:
        return argv
    try:
        from aoe_optuna.spec.stored import space_from_study
        from aoe_optuna.study.storage.opening import open_storage

        study = optuna.load_study(study_name=opts["--study-name"],
                                  storage=open_storage(opts["--storage"]))
        space = space_from_study(study)
    except Exception:  # let optuna's own command report a bad storage or name
        return argv
    if space is None:
        return argv
    dists = {n: json.loads(distribution_to_json(d)) for n, d in space.distributions().items()}
    return [*argv, "--search-space", json.dumps(dists)]


def _options(argv: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for i, arg in enumerate(argv):
        if arg.startswith("--") and "=" in arg:
            key, value = arg.split("=", 1)
            out[key] = value
        elif arg.startswith("--") and i + 1 < len(argv):
            out[arg] = argv[i + 1]
    return out


def main() -> int:
    register_samplers()
    sys.argv[1:] = with_stored_search_space(sys.argv[1:])
    return int(optuna.cli.main() or 0)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
