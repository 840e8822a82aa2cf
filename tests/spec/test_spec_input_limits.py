"""Absurd spec input is one line naming the file and the key, exit 2, nothing written:
nesting far beyond any spec's (a RecursionError before), and NaN or an infinity where a
number is due (a NaN noise passed every range check and failed every measurement)."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from aoe_optuna.backends.simulator.backend import AscendSimulator
from aoe_optuna.cli.main import main
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.spec.format import MAX_SPEC_DEPTH
from aoe_optuna.spec.loader import SpecError, load_spec, spec_from_dict

PROFILES = Path(__file__).resolve().parents[2] / "aoe_optuna" / "hardware" / "profiles"
DEEP = 1000


def _refused(capsys, argv: list[str], folder: Path) -> str:
    """The command exits 2 with one line on stderr and leaves ``folder`` as it was."""
    before = sorted(p.name for p in folder.iterdir())
    code = main(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert sorted(p.name for p in folder.iterdir()) == before
    return err


DEEP_FILES = {
    "toml arrays": ("deep.toml", "x = " + "[" * DEEP + "]" * DEEP + "\n"),
    "toml inline tables": ("deep.toml", "backend = " + "{a = " * DEEP + "1" + "}" * DEEP + "\n"),
    "toml table headers": ("deep.toml", "[" + ".".join(["backend"] * DEEP) + "]\nb = 1\n"),
    "json arrays": ("deep.json", '{"x": ' + "[" * DEEP * 100 + "]" * DEEP * 100 + "}"),
    "json objects": ("deep.json", '{"backend": ' + '{"a": ' * DEEP + "1" + "}" * DEEP + "}"),
}


@pytest.mark.parametrize("name, text", DEEP_FILES.values(), ids=DEEP_FILES.keys())
@pytest.mark.parametrize("command", [[], ["describe"]])
def test_a_spec_nested_absurdly_deep_is_one_line(tmp_path: Path, monkeypatch, capsys,
                                                  name: str, text: str,
                                                  command: list[str]) -> None:
    monkeypatch.chdir(tmp_path)  # the default storage, sqlite:///aoe.db, would land here
    (tmp_path / name).write_text(text)
    argv = [*command, name] if command else ["--config", name, "--n-trials", "1",
                                             "--no-progress"]
    err = _refused(capsys, argv, tmp_path)
    assert err.startswith(f"aoe-tune: error: {name}: ")
    assert "nested too deeply" in err or f"at most {MAX_SPEC_DEPTH} levels" in err, err


def test_nesting_up_to_the_limit_is_read_and_one_more_is_refused() -> None:
    def nested(levels: int) -> dict[str, Any]:
        """A document of ``levels`` nested objects: itself, the backend's, x's ..."""
        value: Any = 1
        for _ in range(levels - 2):
            value = {"a": value}
        return {"backend": {"name": "replay", "x": value}}

    with pytest.raises(SpecError) as deep:
        spec_from_dict(nested(MAX_SPEC_DEPTH + 1), "s.json")
    assert str(deep.value).startswith("s.json: key 'backend.x.a.a")
    assert f"at most {MAX_SPEC_DEPTH} levels" in str(deep.value)
    with pytest.raises(SpecError) as ok:  # the nesting passes; the replay backend refuses x
        spec_from_dict(nested(MAX_SPEC_DEPTH), "s.json")
    assert "levels" not in str(ok.value) and ok.value.key == "backend.x", ok.value


NOT_FINITE = [  # (document, its key): wherever a number is due, any float field of a spec
    ({"backend": {"name": "simulator", "noise": math.nan}}, "backend.noise"),
    ({"backend": {"name": "simulator", "build_s": math.inf}}, "backend.build_s"),
    ({"backend": {"name": "simulator", "launch_us": -math.inf}}, "backend.launch_us"),
    ({"backend": {"name": "simulator", "hidden_failures": math.nan}},
     "backend.hidden_failures"),
    ({"accuracy": {"max_relative_error": math.nan}}, "accuracy.max_relative_error"),
    ({"max_search_time": math.inf}, "max_search_time"),
    ({"target_throughput": math.nan}, "target_throughput"),
    ({"workload": {"gemm": {"M": math.inf, "K": 16, "N": 16}}}, "workload.gemm.M"),
    ({"search_space": {"tile_m": [16, math.nan]}}, "search_space.tile_m[1]"),
    ({"constraints": [{"name": "c", "expression": "tile_m > 0", "x": math.nan}]},
     "constraints[0].x"),
]


@pytest.mark.parametrize("doc, key", NOT_FINITE, ids=[k for _, k in NOT_FINITE])
def test_nan_or_infinity_is_refused_naming_the_key(doc: dict, key: str) -> None:
    with pytest.raises(SpecError) as info:
        spec_from_dict(doc, "s.json")
    assert info.value.key == key and "expected a finite number" in str(info.value)


@pytest.mark.parametrize("name, text", [
    ("nan.json", '{"backend": {"name": "simulator", "noise": NaN}}'),
    ("nan.toml", '[backend]\nname = "simulator"\nnoise = nan\n'),
    ("inf.toml", '[backend]\nname = "simulator"\nnoise = -inf\n'),
])
def test_a_nan_noise_in_a_file_stops_the_run_before_it_starts(tmp_path: Path, monkeypatch,
                                                               capsys, name: str,
                                                               text: str) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / name).write_text(text)
    err = _refused(capsys, ["--config", name, "--n-trials", "2", "--no-progress"], tmp_path)
    assert err.startswith(f"aoe-tune: error: {name}: key 'backend.noise': expected a finite "
                          "number, got "), err


def test_a_profile_file_with_a_nan_figure_is_refused(tmp_path: Path) -> None:
    """Python's json reads NaN too: a SoC profile a spec names by path is checked as well."""
    profile = json.loads((PROFILES / "Ascend910B2.json").read_text())
    profile["figures"]["hbm_bandwidth_gbs"]["value"] = math.nan
    (tmp_path / "soc.json").write_text(json.dumps(profile))
    (tmp_path / "s.json").write_text(json.dumps({"hardware": {"soc": "soc.json"}}))
    with pytest.raises(SpecError) as info:
        load_spec(tmp_path / "s.json")
    assert info.value.key == "hardware.soc"
    assert "figures.hbm_bandwidth_gbs.value': expected a positive finite number" in str(
        info.value)


@pytest.mark.parametrize("option", ["noise", "build_s", "launch_us", "mmad_startup_cycles"])
def test_the_simulator_refuses_a_nan_option_given_in_code(option: str) -> None:
    with pytest.raises(ValueError, match=f"^{option}: expected a number"):
        AscendSimulator.from_options({option: math.nan}, load_profile("Ascend910B2"))
