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
from typing import Any

BACKENDS: dict[str, str] = {
    "simulator": "aoe_optuna.backends.simulator.backend:AscendSimulator",
    "cpu": "aoe_optuna.backends.cpu.backend:CpuBackend",
    "npu": "aoe_optuna.backends.npu.backend:NpuBackend",
    "replay": "aoe_optuna.backends.replay.backend:ReplayBackend",
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
