"""The ReinforceSampler OptunaHub folder loads as the registry loads it; its example runs."""

from __future__ import annotations

import re
import runpy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import optuna
import pytest

optunahub = pytest.importorskip("optunahub")

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "hub" / "package"
PACKAGE = REGISTRY / "samplers" / "aoe_reinforce"


def test_folder_has_the_registry_layout_and_front_matter() -> None:
    for name in ("README.md", "LICENSE", "requirements.txt", "example.py", "__init__.py"):
        assert (PACKAGE / name).is_file(), name
    readme = (PACKAGE / "README.md").read_text()
    front = re.match(r"---\n(.*?)\n---\n", readme, re.S)
    assert front is not None
    keys = {line.split(":")[0] for line in front.group(1).splitlines()}
    assert keys == {"author", "title", "description", "tags", "optuna_versions", "license"}
    assert "## Publishing" in readme and "no binary files" in readme
    assert "aoe_optuna" in (PACKAGE / "requirements.txt").read_text()
    assert not any(p.suffix in {".pt", ".safetensors", ".bin", ".npz"} for p in PACKAGE.rglob("*"))


def test_load_local_module_gives_a_working_sampler() -> None:
    module = optunahub.load_local_module(
        package="samplers/aoe_reinforce", registry_root=str(REGISTRY)
    )
    study = optuna.create_study(sampler=module.ReinforceSampler(seed=0))
    study.optimize(lambda t: (t.suggest_int("x", -10, 10) - 3) ** 2
                   + (t.suggest_int("y", -10, 10) + 2) ** 2, n_trials=40)
    random = optuna.create_study(sampler=optuna.samplers.RandomSampler(seed=0))
    random.optimize(lambda t: (t.suggest_int("x", -10, 10) - 3) ** 2
                    + (t.suggest_int("y", -10, 10) + 2) ** 2, n_trials=40)
    assert study.best_value <= 1 and study.best_value <= random.best_value
    configs = [tuple(t.params.values()) for t in study.trials]
    assert len(set(configs)) == len(configs)  # never a config twice


def test_example_runs_against_the_local_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """example.py as published calls load_module; here it gets the local folder."""
    monkeypatch.setattr(optunahub, "load_module", lambda package, **_: (
        optunahub.load_local_module(package=package, registry_root=str(REGISTRY))))
    monkeypatch.setattr(optuna.Study, "optimize", _short(optuna.Study.optimize))
    runpy.run_path(str(PACKAGE / "example.py"), run_name="__main__")


def _short(optimize: Callable[..., Any]) -> Callable[..., Any]:
    def run(self: optuna.Study, func: Any, n_trials: int | None = None, **kwargs: Any) -> Any:
        return optimize(self, func, n_trials=min(n_trials or 20, 20), **kwargs)
    return run
