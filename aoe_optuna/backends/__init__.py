"""Backend registry: a spec's ``backend.name`` -> the class that measures configs.

Classes are named as ``"module:Class"`` and imported only when a spec asks for
them, so a missing toolchain (CANN, a C compiler) costs nothing until used.
A backend module must import cleanly on any machine; it checks its toolchain
in ``from_options`` or ``measure``.

A backend class provides::

    @classmethod
    def from_options(cls, options: Mapping[str, Any], profile: SocProfile) -> Backend

``options`` is the spec's ``backend`` section without ``name``. Bad options
raise ``ValueError("<option>: expected ..., got ...")``; the leading option name
lets the spec error point at ``backend.<option>``.

A backend whose configs are not the Ascend GEMM tunables (a recorded Kernel
Tuner space) also provides::

    @classmethod
    def search_space(cls, options: Mapping[str, Any], where: str) -> SearchSpace

and, when options hold something that depends on where the spec was read
(a path relative to the spec file),::

    @classmethod
    def resolve_options(cls, options: Mapping[str, Any], where: str) -> dict[str, Any]

which returns them in a form valid from anywhere (an absolute path): the
spec keeps that form, so a study rebuilt from storage finds the same file.
``where`` is the spec's source (its file path, or ``"<stored>"``), for relative
paths and messages. The spec then must not have a ``search_space`` section,
its ``constraints`` are added to this space, and no Ascend hardware rules apply.
"""

from __future__ import annotations

import importlib
import re
from typing import TYPE_CHECKING, Any

from aoe_optuna.spec_format import SpecError

if TYPE_CHECKING:
    from aoe_optuna.backends.base import Backend
    from aoe_optuna.spec import StudySpec

BACKENDS: dict[str, str] = {
    "simulator": "aoe_optuna.backends.simulator:AscendSimulator",
    "cpu": "aoe_optuna.backends.cpu:CpuBackend",
    "npu": "aoe_optuna.backends.npu:NpuBackend",
    "replay": "aoe_optuna.backends.replay:ReplayBackend",
}


def backend_class(name: str) -> type:
    """Import the class registered under ``name`` (KeyError if none, ImportError if broken)."""
    module_name, _, class_name = BACKENDS[name].partition(":")
    module = importlib.import_module(module_name)
    try:
        return getattr(module, class_name)
    except AttributeError:
        raise ImportError(f"{module_name} has no class {class_name}") from None


def backend_options(spec_backend: dict[str, Any]) -> dict[str, Any]:
    """The backend section without its name: what ``from_options`` receives."""
    return {k: v for k, v in spec_backend.items() if k != "name"}


def option_error(source: str, options: dict[str, Any], exc: ValueError, what: str) -> SpecError:
    """A backend's ValueError as a SpecError, at ``backend.<option>`` when it names one."""
    text = " ".join(str(exc).split())
    key, detail = "backend", text
    match = re.match(r"^([A-Za-z_]\w*): (.*)$", text)
    if match and match.group(1) in options:
        key, detail = f"backend.{match.group(1)}", match.group(2)
    if detail.startswith("expected "):
        expected, _, got = detail.removeprefix("expected ").partition(", got ")
        return SpecError(source, key, expected, got)
    return SpecError(source, key, what, detail)


def make_backend(spec: StudySpec) -> Backend:
    """The backend the spec names, built from its options for the spec's SoC."""
    name = spec.backend["name"]
    try:
        cls = backend_class(name)
    except KeyError:
        raise SpecError(spec.source, "backend.name", f"one of {sorted(BACKENDS)}",
                        repr(name)) from None
    except ImportError as exc:
        raise SpecError(spec.source, "backend.name", "a backend whose module imports",
                        f"{name!r} ({type(exc).__name__}: {exc})") from None
    options = backend_options(spec.backend)
    try:
        return cls.from_options(options, spec.profile)
    except ValueError as exc:
        raise option_error(spec.source, options, exc, "valid backend options") from None
