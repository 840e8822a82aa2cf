"""A study's prior (``spec.prior``) built into what GPUCBSampler takes.

``spec/prior.py`` reads where the prior comes from; this builds it: the
simulator of the spec's SoC (calibrated per kernel family as the study
runs, ``samplers/priors/simulator.py``), a recording of the same kernel,
or another study's completed trials, read from its storage without
writing to it. A source that cannot be read is one line (``PriorError``)
before anything of the study is written.
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import optuna
from optuna.trial import TrialState

from aoe_optuna.samplers.priors.base import ConfigPrior
from aoe_optuna.samplers.priors.recording import recording_prior
from aoe_optuna.samplers.priors.simulator import spec_simulator_prior
from aoe_optuna.samplers.priors.table import TablePrior
from aoe_optuna.spec.prior import PriorSource
from aoe_optuna.study.storage.file_kind import is_missing, storage_file
from aoe_optuna.study.storage.opening import StorageError, open_storage
from aoe_optuna.study.storage.redact import redact_url

if TYPE_CHECKING:
    from aoe_optuna.spec.loader import StudySpec


class PriorError(ValueError):
    """A prior source that cannot be read; the message is one line."""


def build_prior(spec: StudySpec) -> ConfigPrior | None:
    """The prior ``spec.prior`` names (None: none)."""
    source = spec.prior
    if source is None:
        return None
    if source.kind == "simulator":
        return spec_simulator_prior(spec)
    if source.kind == "recording":
        return _recording(source, spec.source)
    return study_prior(source)


def _recording(source: PriorSource, spec_file: str) -> TablePrior:
    assert source.path is not None
    path = Path(source.path).expanduser()
    if not path.is_absolute() and not spec_file.startswith("<"):
        path = Path(spec_file).parent / path
    try:
        return recording_prior(path)
    except ValueError as exc:
        raise PriorError(f"prior.recording: {exc}") from None


def study_prior(source: PriorSource) -> TablePrior:
    """The completed trials of study ``source.name`` in ``source.storage`` as a table."""
    assert source.name is not None and source.storage is not None
    shown = redact_url(source.storage)
    local = storage_file(source.storage)
    if local is not None and is_missing(local):
        raise PriorError(f"prior.storage: {local} does not exist; expected the storage of "
                         f"study {source.name!r}")
    try:
        study = optuna.load_study(study_name=source.name, storage=open_storage(source.storage))
    except StorageError as exc:
        raise PriorError(f"prior.storage: {exc}") from None
    except KeyError:
        raise PriorError(f"prior.study: expected a study of {shown}, got {source.name!r} "
                         "(no such study)") from None
    trials = [t for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE,))
              if t.value is not None]
    if not trials:
        raise PriorError(f"prior.study: study {source.name!r} in {shown} has no completed "
                         "trial to learn from")
    sign = -1.0 if study.direction == optuna.study.StudyDirection.MINIMIZE else 1.0
    return TablePrior(f"study {source.name}", [t.params for t in trials],
                      [sign * float(t.value) for t in trials])  # type: ignore[arg-type]
