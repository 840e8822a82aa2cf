"""A study's prior (``spec.prior``) built into what GPUCBSampler takes.

``spec/prior.py`` reads where the prior comes from; this builds it: the
simulator of the spec's SoC (calibrated per kernel family as the study
runs, ``samplers/priors/simulator.py``), the backend's model of its own
kernel (the cpu backend's, ``backends/cpu/kernel_model.py``, scaled the same
way), a recording of the same kernel,
another study's completed trials, read from its storage without writing
to it, or a knowledge base's winners of the same op
(``samplers/priors/near_configs.py``). A source that cannot be read is one line (``PriorError``)
before anything of the study is written.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import TYPE_CHECKING, Any

import optuna
from optuna.trial import TrialState

from aoe_optuna.kb_file import KBFileError, gemm_kb_op, read_entries, shape_sq_distance
from aoe_optuna.samplers.priors.base import ConfigPrior
from aoe_optuna.samplers.priors.near_configs import Anchor, NearConfigsPrior
from aoe_optuna.samplers.priors.recording import recording_prior
from aoe_optuna.samplers.priors.simulator import SimulatorPrior, spec_simulator_prior
from aoe_optuna.samplers.priors.table import TableError, TablePrior
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
    if source.kind == "model":
        return model_prior(spec)
    if source.kind == "recording":
        try:
            return recording_prior(_path(source, spec.source))
        except ValueError as exc:
            raise PriorError(f"prior.recording: {exc}") from None
    if source.kind == "kb":
        return kb_prior(_path(source, spec.source), spec)
    return study_prior(source)


def _path(source: PriorSource, spec_file: str) -> Path:
    """A recording's or knowledge base's path, relative to the spec's folder."""
    assert source.path is not None
    path = Path(source.path).expanduser()
    if not path.is_absolute() and not spec_file.startswith("<"):
        path = Path(spec_file).parent / path
    return path


def model_prior(spec: StudySpec) -> SimulatorPrior:
    """The backend's model of its own kernel, scaled to the study's measurements as the
    simulator is on the chip (one scale and fixed cost, per kernel family where the space
    has families)."""
    model = spec.backend_kind.kernel_model()
    if model is None:
        raise PriorError(f"prior: the {spec.backend_kind.name} backend has no model of its "
                         "kernel")
    return SimulatorPrior(model.describe(), spec.workload, model)


# how far an entry measured on another SoC (or in another dtype) lies from the study's
# problem, in the units of a shape's distance: one doubling of one of M, K, N
OTHER_SOC = 1.0
OTHER_DTYPE = 1.0
TIE_AWAY = 0.1  # an entry's ties rank just after its winner: measured first is the winner


def kb_prior(path: Path, spec: StudySpec) -> NearConfigsPrior:
    """The knowledge base at ``path`` as the prior of ``spec``'s GEMM study: the winners
    and ties of its entries of the study's op, any shape, SoC or dtype, each as far
    from the study as its shape lies from the study's nearest (log2 M, K, N) and
    further where its SoC or dtype differ."""
    shapes = {(gemm_kb_op(spec.op_name, g.batch), g.dtype, g.M, g.K, g.N)
              for g in spec.workload.gemms}
    if spec.backend_space or not shapes:
        raise PriorError(f"prior.kb: a knowledge base prior serves GEMM studies; "
                         f"{spec.op_name} tunes no GEMM")
    try:
        raw = read_entries(path, missing_ok=False)
    except KBFileError as exc:
        raise PriorError(f"prior.kb: {exc}") from None
    anchors, used = [], 0
    ops = sorted({op for op, *_ in shapes})
    for entry in raw:
        away = _entry_away(entry, shapes, spec.profile.soc)
        if away is None:
            continue
        used += 1
        anchors.append(Anchor(entry["config"], away))
        anchors += [Anchor(c, away + TIE_AWAY) for c in entry.get("ties") or []
                    if isinstance(c, dict)]
    if not anchors:
        raise PriorError(f"prior.kb: {path}: expected an entry of op {', '.join(ops)}, "
                         f"holds none of {len(raw)}")
    prior = NearConfigsPrior(f"knowledge base {path.name} ({used} "
                             f"entr{'y' if used == 1 else 'ies'} of {', '.join(ops)})",
                             anchors)
    try:
        prior.noted_rows(spec.space)
    except TableError as exc:
        raise PriorError(f"prior.kb: {exc}") from None
    return prior


def _entry_away(entry: Any, shapes: set[tuple[str, str, int, int, int]],
                soc: str) -> float | None:
    """How far a stored entry lies from the study's nearest shape of its op (None: not
    a GEMM entry of one of the study's ops, or not one that can be read)."""
    if not isinstance(entry, dict) or entry.get("kind", "gemm") != "gemm":
        return None
    try:
        m, k, n = (int(entry[d]) for d in ("M", "K", "N"))
        if min(m, k, n) < 1 or not isinstance(entry.get("config"), dict):
            return None
        best = min(math.sqrt(shape_sq_distance((m, k, n), (sm, sk, sn)))
                   + (OTHER_DTYPE if entry.get("dtype") != dtype else 0.0)
                   for op, dtype, sm, sk, sn in shapes if op == entry.get("op"))
    except (KeyError, TypeError, ValueError):  # no shape of its op: min() of nothing
        return None
    return best + (OTHER_SOC if entry.get("soc") != soc else 0.0)


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
