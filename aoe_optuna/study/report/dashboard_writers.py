"""optuna-dashboard's note and plot writers, without importing its server.

``import optuna_dashboard`` runs the package's ``__init__``, which imports the
web app and, through it, torch, BoTorch and scikit-learn: about 2.7 s of a
tuning run that only writes a note and a plot into the study. The two writer
modules (``_note.py``, ``_custom_plot_data.py``) import nothing but Optuna, so
they are loaded here from the installed package's files on their own. Where
the package's layout differs from the one expected, the public import is used.
"""

from __future__ import annotations

import importlib.util
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

PACKAGE = "optuna_dashboard"


def save_note() -> Callable[[Any, str], None] | None:
    """``optuna_dashboard.save_note``, or None without the ``dashboard`` extra."""
    return _writer("_note", "save_note")


def save_plotly_graph_object() -> Callable[..., None] | None:
    """``optuna_dashboard.save_plotly_graph_object``, or None without the extra."""
    return _writer("_custom_plot_data", "save_plotly_graph_object")


def _writer(module: str, name: str) -> Callable[..., Any] | None:
    loaded = _load_alone(module)
    if loaded is not None and callable(getattr(loaded, name, None)):
        return getattr(loaded, name)
    try:
        package = importlib.import_module(PACKAGE)
    except ImportError:
        return None
    return getattr(package, name, None)


_LOADED: dict[str, ModuleType | None] = {}


def _load_alone(module: str) -> ModuleType | None:
    """The package's ``module`` run from its file, outside the package (cached)."""
    if module in _LOADED:
        return _LOADED[module]
    found = None
    spec = importlib.util.find_spec(PACKAGE)  # finds the folder; runs no __init__
    if spec is not None and spec.submodule_search_locations:
        path = Path(next(iter(spec.submodule_search_locations))) / f"{module}.py"
        file_spec = importlib.util.spec_from_file_location(f"_aoe_{PACKAGE}{module}", path)
        if path.is_file() and file_spec is not None and file_spec.loader is not None:
            found = importlib.util.module_from_spec(file_spec)
            try:
                file_spec.loader.exec_module(found)
            except ImportError:  # the module grew a package-relative import
                found = None
    _LOADED[module] = found
    return found
