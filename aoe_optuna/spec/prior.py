"""A study's prior: where GP-UCB's prediction of every config comes from.

Spec section ``prior`` (and ``aoe-tune --prior``, which overrides it):

    "prior": "none"                                   no prior
    "prior": "simulator"                              the simulator of the spec's SoC,
                                                      calibrated per kernel family as the
                                                      study runs (the npu backend's default)
    "prior": "model"                                  the backend's model of its own kernel,
                                                      scaled to the study's measurements
                                                      (the cpu backend's default)
    "prior": {"study": "NAME", "storage": "URL"}      another study of the same parameters
                                                      (another SoC, another shape), in any
                                                      storage: its completed trials
    "prior": {"recording": "PATH"}                    a Kernel Tuner recording of the same
                                                      kernel (another device)
    "prior": {"kb": "PATH"}                           a knowledge base's entries of the same
                                                      op (other shapes, other SoCs): their
                                                      winners and ties

The CLI's forms are ``none``, ``simulator``, ``model``, ``study:NAME@URL``, ``recording:PATH`` and
``kb:PATH``. What each becomes is built by the study's session
(``study/prior_of.py``); here it is only read and checked.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from aoe_optuna.backends.base import BackendBase
from aoe_optuna.spec.format import Section, SpecError, describe

PriorKind = Literal["simulator", "model", "study", "recording", "kb"]
FORMS = ("'none', 'simulator', 'model', {\"study\": NAME, \"storage\": URL}, {\"recording\": PATH} "
         "or {\"kb\": PATH}")
CLI_FORMS = "none, simulator, model, study:NAME@URL, recording:PATH or kb:PATH"


@dataclass(frozen=True)
class PriorSource:
    """Where a study's prior comes from (``study``: name and storage URL; ``recording``
    and ``kb``: a path, relative to the spec's folder when it came from a spec)."""

    kind: PriorKind
    name: str | None = None
    storage: str | None = None
    path: str | None = None

    def document(self) -> Any:
        """The spec section that reads back as this source."""
        if self.kind in ("simulator", "model"):
            return self.kind
        if self.kind == "study":
            return {"study": self.name, "storage": self.storage}
        return {self.kind: self.path}


def default_prior(backend: type[BackendBase]) -> PriorSource | None:
    """The prior a spec without a ``prior`` section gets: the simulator where the backend
    asks for it (the npu backend: a measurement there costs a kernel build), else the
    backend's model of its kernel where it has one (the cpu backend), else none."""
    if backend.simulator_prior_by_default:
        return PriorSource("simulator")
    return PriorSource("model") if backend.kernel_model() is not None else None


def parse_prior(document: Any, source: str, backend: type[BackendBase]) -> PriorSource | None:
    """The spec's ``prior`` section, checked (absent: :func:`default_prior`)."""
    if document is None:
        return default_prior(backend)
    if document == "none":
        return None
    if document == "simulator":
        if not backend.runs_on_soc:
            raise SpecError(source, "prior", f"a prior for the {backend.name} backend "
                            "(the simulator predicts Ascend kernels only)", "'simulator'")
        return PriorSource("simulator")
    if document == "model":
        if backend.kernel_model() is None:
            raise SpecError(source, "prior", f"a prior for the {backend.name} backend (it "
                            "has no model of its kernel)", "'model'")
        return PriorSource("model")
    if isinstance(document, str):
        raise SpecError(source, "prior", FORMS, describe(document))
    section = Section(source, "prior", document, FORMS)
    if section.has("study"):
        section.check_keys(("study", "storage"))
        return PriorSource("study", name=section.string("study"),
                           storage=section.string("storage"))
    for kind in ("recording", "kb"):
        if section.has(kind):
            section.check_keys((kind,))
            return PriorSource(kind, path=section.string(kind))  # type: ignore[arg-type]
    raise SpecError(source, "prior", FORMS, describe(document))


def prior_option(text: str, backend: type[BackendBase]) -> PriorSource | None:
    """``aoe-tune --prior TEXT`` as a source (``ValueError`` names what was expected)."""
    kind, sep, rest = text.partition(":")
    if not sep and text in ("none", "simulator", "model"):
        return parse_prior(text, "--prior", backend)
    if kind == "study" and "@" in rest:
        name, _, url = rest.partition("@")
        if name and url:
            return PriorSource("study", name=name, storage=url)
    if kind in ("recording", "kb") and rest:
        return PriorSource(kind, path=rest)  # type: ignore[arg-type]
    raise ValueError(f"--prior: expected {CLI_FORMS}, got {text!r}")
