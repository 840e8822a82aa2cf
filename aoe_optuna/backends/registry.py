"""Backend registry: a spec's ``backend.name`` -> the class that measures configs.

Classes are named as ``"module:Class"`` and imported only when a spec asks for
them, so a missing toolchain (CANN, a C compiler) costs nothing until used.
Each is a :class:`aoe_optuna.backends.base.BackendBase`, which declares the
hooks a spec may call. The registry knows names only, not specs.
"""

from __future__ import annotations

import importlib
from typing import Any

from aoe_optuna.backends.base import BackendBase

BACKENDS: dict[str, str] = {
    "simulator": "aoe_optuna.backends.simulator.backend:AscendSimulator",
    "cpu": "aoe_optuna.backends.cpu.backend:CpuBackend",
    "npu": "aoe_optuna.backends.npu.backend:NpuBackend",
    "replay": "aoe_optuna.backends.replay.backend:ReplayBackend",
}


def backend_class(name: str) -> type[BackendBase]:
    """Import the class registered under ``name`` (KeyError if none, ImportError if broken)."""
    module_name, _, class_name = BACKENDS[name].partition(":")
    module = importlib.import_module(module_name)
    cls = getattr(module, class_name, None)
    if cls is None:
        raise ImportError(f"{module_name} has no class {class_name}")
    if not (isinstance(cls, type) and issubclass(cls, BackendBase)):
        raise ImportError(f"{module_name}:{class_name} is not a BackendBase")
    return cls


def backend_options(spec_backend: dict[str, Any]) -> dict[str, Any]:
    """The backend section without its name: what ``from_options`` receives."""
    return {k: v for k, v in spec_backend.items() if k != "name"}
