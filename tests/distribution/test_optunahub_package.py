"""The OptunaHub package folder loads the way the registry loads it, and its example runs."""

from __future__ import annotations

import re
import runpy
from pathlib import Path

import optuna
import pytest

optunahub = pytest.importorskip("optunahub")

ROOT = Path(__file__).resolve().parents[2]
REGISTRY = ROOT / "hub" / "package"
PACKAGE = REGISTRY / "samplers" / "aoe_gp_ucb"


def test_folder_has_the_registry_layout_and_front_matter() -> None:
    for name in ("README.md", "LICENSE", "requirements.txt", "example.py", "__init__.py"):
        assert (PACKAGE / name).is_file(), name
    front = re.match(r"---\n(.*?)\n---\n", (PACKAGE / "README.md").read_text(), re.S)
    assert front is not None
    keys = {line.split(":")[0] for line in front.group(1).splitlines()}
    assert keys == {"author", "title", "description", "tags", "optuna_versions", "license"}
    assert not any(p.suffix in {".pt", ".safetensors", ".bin"} for p in PACKAGE.rglob("*"))


def test_load_local_module_gives_a_working_sampler() -> None:
    module = optunahub.load_local_module(
        package="samplers/aoe_gp_ucb", registry_root=str(REGISTRY)
    )
    study = optuna.create_study(sampler=module.GPUCBSampler(seed=0, n_startup_trials=3))
    study.optimize(lambda t: (t.suggest_float("x", -5, 5) - 1.25) ** 2, n_trials=10)
    assert study.best_value < 0.1


def test_example_runs_against_the_local_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """example.py as published calls load_module; here it gets the local folder."""
    monkeypatch.setattr(optunahub, "load_module", lambda package, **_: (
        optunahub.load_local_module(package=package, registry_root=str(REGISTRY))))
    monkeypatch.setattr(optuna.Study, "optimize", _short(optuna.Study.optimize))
    runpy.run_path(str(PACKAGE / "example.py"), run_name="__main__")


def _short(optimize):
    def run(self, func, n_trials=None, **kwargs):  # 12 trials keep the test quick
        return optimize(self, func, n_trials=min(n_trials or 12, 12), **kwargs)
    return run
