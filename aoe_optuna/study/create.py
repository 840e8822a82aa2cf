"""Creating, checking and loading tuning studies.

A study is self-describing: the first ``aoe-tune`` on it stores the spec, the
baseline and the roofline bound as study user attributes; every later worker,
a resume, or the dashboard needs only the storage and the study name.
A study made beforehand by ``optuna create-study --direction maximize`` is
adopted as is. A minimize study, or a stored spec that differs from the one
given, is refused: nothing is overwritten silently. The spec is written once
(:mod:`.storage.write_once`): of two runs that start one study together with different
specs, the first to write wins and the other is refused before it writes
anything more.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import optuna
from optuna.exceptions import DuplicatedStudyError
from optuna.study import StudyDirection
from optuna.trial import FrozenTrial, TrialState

from aoe_optuna.attrs import ATTR_BASELINE, ATTR_CUT_SHORT, ENV_ATTR
from aoe_optuna.spec.loader import StudySpec, spec_from_dict
from aoe_optuna.spec.stored import ROOFLINE_ATTR, SPEC_ATTR, SPEC_SOURCE_ATTR
from aoe_optuna.study.storage.write_once import set_once
from aoe_optuna.study.trials.recovery import stored_value, trial_config

METRIC_NAME = "tokens/s"  # what a study's value is


class StudyError(RuntimeError):
    """A study that cannot be used as asked; the message is one line."""


class OtherSpecStored(StudyError):
    """The study holds another spec than the one given (perhaps stored a moment ago by a
    run that started together with this one)."""


def load_or_create(
    storage: optuna.storages.BaseStorage,
    study_name: str,
    spec: StudySpec | None,
    roofline_tokens_per_s: float | None = None,
) -> tuple[optuna.Study, StudySpec]:
    """Open ``study_name`` (creating it when a spec is given) and reconcile the spec."""
    existing = optuna.get_all_study_names(storage)  # (the summaries would read every trial)
    if study_name not in existing:
        if spec is None:
            known = ", ".join(sorted(existing)) or "none"
            raise StudyError(
                f"study {study_name!r} does not exist in this storage (studies: {known}); "
                "pass --config to create it"
            )
        try:
            study = optuna.create_study(
                storage=storage, study_name=study_name, direction="maximize"
            )
            study.set_metric_names([METRIC_NAME])  # the dashboard's axis and column title
        except DuplicatedStudyError:  # a worker started together with this one made it
            study = optuna.load_study(study_name=study_name, storage=storage)
    else:
        study = optuna.load_study(study_name=study_name, storage=storage)
        if len(study.directions) != 1 or study.direction != StudyDirection.MAXIMIZE:
            raise StudyError(
                f"study {study_name!r} is not a single-objective maximize study "
                "(aoe-tune maximises tokens/s): create it with --direction maximize"
            )
    stored = study.user_attrs.get(SPEC_ATTR)
    if stored is None:
        if spec is None:
            raise StudyError(
                f"study {study_name!r} has no stored spec (not made by aoe-tune): pass --config"
            )
        _check_adoptable(study, spec)
        # write-once and read back: of two runs starting the study at the same instant
        # with different specs, the second learns here that the first one's is stored
        stored = set_once(study, SPEC_ATTR, spec.canonical())
        if _normal(stored) != _normal(spec.canonical()):
            raise OtherSpecStored(
                f"study {study_name!r}: another run started it at the same time from a "
                f"different spec ({_first_difference(stored, spec.canonical())}); nothing "
                "was measured: use another --study-name"
            )
        if study.metric_names is None:  # made by `optuna create-study`, which names none
            study.set_metric_names([METRIC_NAME])
        study.set_user_attr(SPEC_SOURCE_ATTR, spec.source)
        if roofline_tokens_per_s is not None:
            study.set_user_attr(ROOFLINE_ATTR, roofline_tokens_per_s)
        return study, spec
    if spec is not None:
        if _normal(stored) != _normal(spec.canonical()):
            diff = _first_difference(stored, spec.canonical())
            raise OtherSpecStored(
                f"study {study_name!r} was created from a different spec ({diff}); "
                "use another --study-name, or omit --config to resume the stored one"
            )
        return study, spec
    return study, spec_from_dict(stored, source=f"<study {study_name}>")


def project_version() -> str:
    """This package's version, as installed (``0+unknown`` from a bare source tree)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("aoe_optuna")
    except PackageNotFoundError:
        return "0+unknown"


def environment_stamp(environment: dict[str, str]) -> dict[str, str]:
    """A backend's environment with the project's version: what a timing was taken under."""
    return {"project": f"aoe_optuna {project_version()}", **environment}


def stamp_environment(study: optuna.Study, environment: dict[str, str]) -> dict[str, str]:
    """Record where this run measures (the last run's stamp is the study's)."""
    stamp = environment_stamp(environment)
    if study.user_attrs.get(ENV_ATTR) != stamp:
        study.set_user_attr(ENV_ATTR, stamp)
    return stamp


def default_study_name(storage: optuna.storages.BaseStorage, spec: StudySpec) -> str:
    """The spec's derived name, or, when a study of that name holds another spec, the
    name plus a digest of this spec: two shipped specs can share one storage file.

    The same spec always lands on the same study, so the same command resumes it.
    """
    base = spec.default_study_name()
    try:
        study = optuna.load_study(study_name=base, storage=storage,
                                  sampler=optuna.samplers.RandomSampler())
    except KeyError:
        return base
    stored = study.user_attrs.get(SPEC_ATTR)
    if stored is None or _normal(stored) == _normal(spec.canonical()):
        return base
    digest = hashlib.sha256(json.dumps(_normal(spec.canonical()), sort_keys=True,
                                       default=str).encode()).hexdigest()[:8]
    return f"{base}-{digest}"


def _check_adoptable(study: optuna.Study, spec: StudySpec) -> None:
    """A pre-made study may already hold trials; their params must fit the space."""
    names = set(spec.space.names)
    for t in study.get_trials(deepcopy=False):
        if t.params and set(t.params) != names:
            raise StudyError(
                f"study {study.study_name!r} holds trial {t.number} with parameters "
                f"{sorted(t.params)}, not those of the spec {sorted(names)}"
            )


def enqueue_baseline(study: optuna.Study, spec: StudySpec) -> bool:
    """Enqueue the baseline config once per study, so it is measured first."""
    return enqueue_config_baseline(study, spec.baseline)


def enqueue_config_baseline(study: optuna.Study, baseline: dict[str, Any] | None) -> bool:
    """Enqueue ``baseline`` once per study (a study whose space is not a spec's: an
    operator run's attention or vector kernel)."""
    if baseline is None:
        return False
    for t in study.get_trials(deepcopy=False):
        if t.user_attrs.get(ATTR_BASELINE) or _same_params(t, baseline):
            return False
    study.enqueue_trial(dict(baseline), user_attrs={ATTR_BASELINE: True})
    return True


def baseline_trial(study: optuna.Study, spec: StudySpec) -> FrozenTrial | None:
    """The trial that measured the baseline config, if any (see ``measured_results``)."""
    return config_baseline_trial(study, spec.baseline)


def config_baseline_trial(study: optuna.Study, baseline: dict[str, Any] | None
                          ) -> FrozenTrial | None:
    """The trial that measured ``baseline``, if any."""
    if baseline is None:
        return None
    for t in measured_results(study):
        if _same_params(t, baseline):
            return t
    return None


def best_trial(study: optuna.Study) -> FrozenTrial | None:
    """The best measurement, whichever state its trial was left in (see ``measured_results``);
    never one whose timing was cut short (clearly slower than the incumbent of its time)."""
    results = [t for t in measured_results(study) if not t.user_attrs.get(ATTR_CUT_SHORT)]
    if not results:
        return None
    pick = min if study.direction == StudyDirection.MINIMIZE else max
    return pick(results, key=lambda t: float(t.value))  # type: ignore[arg-type]


def measured_results(study: optuna.Study) -> list[FrozenTrial]:
    """Every trial holding a successful measurement, as a trial whose ``value`` is it.

    A COMPLETE trial as it is; a FAIL trial whose whole result reached storage
    before something else failed it (a heartbeat on a storage opened without
    ``KeepResultOnStale``, an older version of this package) as a copy carrying
    the stored value: a result in storage is a measurement, whoever ended its trial.
    """
    results: list[FrozenTrial] = []
    for t in study.get_trials(deepcopy=False, states=(TrialState.COMPLETE, TrialState.FAIL)):
        if t.state == TrialState.COMPLETE:
            if t.value is not None:
                results.append(t)
            continue
        value = stored_value(t)
        if value is not None:
            kept = copy.copy(t)
            kept.value = value
            results.append(kept)
    return results


def _same_params(trial: FrozenTrial, config: dict[str, Any]) -> bool:
    """Whether ``trial`` runs ``config``: by its params, or those it waits with (enqueued)."""
    params = trial_config(trial)
    return bool(params) and all(params.get(k) == v for k, v in config.items())


def _normal(doc: Any) -> str:
    return json.dumps(doc, sort_keys=True, default=str)


def _first_difference(a: Any, b: Any, path: str = "") -> str:
    if isinstance(a, dict) and isinstance(b, dict):
        for key in sorted(set(a) | set(b)):
            sub = f"{path}.{key}" if path else str(key)
            if key not in a:
                return f"{sub} is new"
            if key not in b:
                return f"{sub} is missing"
            if _normal(a[key]) != _normal(b[key]):
                return _first_difference(a[key], b[key], sub)
    return f"{path or 'spec'}: stored {_short(a)}, given {_short(b)}"


def _short(value: Any) -> str:
    text = json.dumps(value, default=str)
    return text if len(text) <= 60 else text[:57] + "..."
