"""The README's spec example is a valid spec (docs that users copy must work)."""

from __future__ import annotations

from pathlib import Path

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
