"""The README's examples work as written (docs that users copy must work)."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.spec.loader import load_spec

ROOT = Path(__file__).resolve().parents[2]


def test_readme_spec_example_loads(tmp_path: Path) -> None:
    text = (ROOT / "README.md").read_text()
    start = text.index('    {\n      "op_name"')
    end = text.index("    }\n", start) + len("    }\n")
    spec_file = tmp_path / "readme.json"
    spec_file.write_text("\n".join(line[4:] for line in text[start:end].splitlines()))
    spec = load_spec(spec_file)
    assert spec.space.size == 16 * 4 * 3 * 3 * 2 * 2 * 2 * 2
    assert spec.baseline is not None and spec.baseline["tile_m"] == 64


def test_readme_python_example_runs(monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    text = (ROOT / "README.md").read_text()
    start = text.index("## Use it from Python")
    begin = text.index("```python\n", start) + len("```python\n")
    code = text[begin:text.index("```\n", begin)]
    assert 10 <= len(code.strip().splitlines()) <= 16  # the short example the README promises
    monkeypatch.chdir(ROOT)  # it names the spec by its path in the repository
    namespace: dict = {}
    exec(compile(code, "README.md", "exec"), namespace)  # noqa: S102
    study = namespace["study"]
    assert len(study.trials) == 30
    assert study.trials[0].params == namespace["spec"].baseline
    assert study.best_value > study.trials[0].value  # it found a better config than the baseline
    assert study.best_trial.user_attrs["measured"] is True
    assert "tokens/s with {'tile_m'" in capsys.readouterr().out
