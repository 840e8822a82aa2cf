"""The built wheel is what an installer sees: ranges, extras, licence, package data.

`scripts/check_dist.sh` goes further (a fresh venv per artifact and a study
run there); it needs minutes and the package index, so it is not run here.
"""

from __future__ import annotations

import re
import subprocess
import sys
import tomllib
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "constraints.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            assert version, f"constraints.txt: {line!r} is not an exact pin"
            pins[re.sub(r"[-_.]+", "-", name).lower()] = version
    return pins


def _requirements() -> list[Requirement]:
    reqs = [Requirement(r) for r in PYPROJECT["dependencies"]]
    for extra in PYPROJECT["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra if not r.startswith("aoe_optuna")]
    return reqs


def test_dependencies_are_ranges_and_each_has_an_exact_pin() -> None:
    pins = _pins()
    for req in _requirements():
        assert not any(s.operator in ("==", "===") for s in req.specifier), (
            f"pyproject.toml pins {req}; exact versions belong in constraints.txt"
        )
        name = re.sub(r"[-_.]+", "-", req.name).lower()
        assert name in pins, f"constraints.txt has no pin for {req.name}"
        assert req.specifier.contains(pins[name], prereleases=True), (
            f"constraints.txt pins {req.name}=={pins[name]}, outside pyproject's {req}"
        )


def test_extras_and_licence_are_declared() -> None:
    assert set(PYPROJECT["optional-dependencies"]) >= {"dashboard", "postgres", "bench", "dev"}
    assert PYPROJECT["license"] == "MIT" and (ROOT / "LICENSE").is_file()
    assert PYPROJECT["classifiers"]


@pytest.mark.slow
def test_wheel_carries_metadata_licence_and_package_data(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
         str(ROOT)],
        check=True, capture_output=True, timeout=300,
    )
    (wheel,) = tmp_path.glob("aoe_optuna-*.whl")
    with zipfile.ZipFile(wheel) as zf:
        names = set(zf.namelist())
        meta_name = next(n for n in names if n.endswith(".dist-info/METADATA"))
        meta = Parser().parsestr(zf.read(meta_name).decode())
    assert meta["License-Expression"] == "MIT"
    assert any(n.endswith("licenses/LICENSE") for n in names)
    assert "aoe_optuna/hardware/profiles/Ascend910B2.json" in names
    templates = {p.relative_to(ROOT).as_posix()
                 for p in (ROOT / "aoe_optuna" / "backends").glob("**/templates/*")}
    assert "aoe_optuna/backends/npu/simple_gemm/templates/gemm_kernel.cpp" in templates
    assert templates <= names  # every backend's and every kernel family's templates
    assert not any(n.startswith("tests/") for n in names)
    for req in map(Requirement, meta.get_all("Requires-Dist")):
        assert not any(s.operator == "==" for s in req.specifier), req
    assert {"dashboard", "postgres", "bench", "dev"} <= set(meta.get_all("Provides-Extra"))
