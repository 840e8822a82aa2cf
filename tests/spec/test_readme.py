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


def _python_blocks(text: str) -> list[str]:
    start = text.index("## Use it from Python")
    end = text.index("\n## ", start + 5)
    blocks, at = [], start
    while (at := text.find("```python\n", at, end)) != -1:
        begin = at + len("```python\n")
        blocks.append(text[begin:text.index("```\n", begin)])
        at = begin
    return blocks


def test_readme_python_examples_run(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    session_code, optuna_code = _python_blocks((ROOT / "README.md").read_text())
    monkeypatch.chdir(tmp_path)  # the session example's sqlite:///aoe.db lands here
    for code in (session_code, optuna_code):
        assert 8 <= len(code.strip().splitlines()) <= 18  # the short examples it promises
    namespace: dict = {}
    exec(compile(session_code.replace('"studies/', f'"{ROOT}/studies/'), "README.md",
                 "exec"), namespace)  # noqa: S102
    session = namespace["session"]
    assert session.study.trials[0].params == namespace["spec"].baseline
    assert sum(t.user_attrs.get("measured") is True for t in session.study.trials) == 30
    namespace = {}
    exec(compile(optuna_code.replace('"studies/', f'"{ROOT}/studies/'), "README.md",
                 "exec"), namespace)  # noqa: S102
    study = namespace["study"]
    assert len(study.trials) == 30
    assert study.trials[0].params == namespace["spec"].baseline
    assert study.best_value > study.trials[0].value  # it found a better config than the baseline
    assert study.best_trial.user_attrs["measured"] is True
    assert "tokens/s with {'tile_m'" in capsys.readouterr().out
