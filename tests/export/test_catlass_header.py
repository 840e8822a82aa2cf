"""`aoe-tune export --catlass-header`: the best config as a catlass instantiation header."""

from __future__ import annotations

import json
import re
from pathlib import Path

import optuna
import pytest

from aoe_optuna.cli.main import main
from aoe_optuna.export.catlass_header import catlass_header
from aoe_optuna.export.kernel_source import ExportError, ExportInfo
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.params import default_config

PROFILE = load_profile("Ascend910B2")
SPEC = """\
op_name = "CatlassGemm"
optimization_objective = "throughput"

[search_space]
tile_m = [64, 128]
tile_k = [64]
tile_n = [128, 256]
split_k = [1, 2]
swizzle_direction = [0, 1]

[hardware]
soc = "Ascend910B2"

[workload.gemm]
M = 64
K = 4096
N = 1024
dtype = "fp16"

[backend]
name = "simulator"
noise = 0.0
seed = 0
"""


def test_header_records_where_the_config_came_from():
    info = ExportInfo(study="s1", storage="postgresql://u:secret@db/x", trial=7, value=150.0,
                      baseline=100.0)
    config = {**default_config(), "tile_m": 64, "split_k": 2}
    text, args = catlass_header(config, PROFILE, "fp16", info)
    assert args.variant == "splitk" and args.l1 == (64, 256, 256)
    assert " * SoC Ascend910B2, dtype fp16." in text
    assert " * Study s1 in postgresql://u:***@db/x, trial 7." in text and "secret" not in text
    assert " * tokens/s: 150 (+50.0% over the baseline)." in text
    config_line = next(line for line in text.splitlines() if line.startswith(" * Config: "))
    assert json.loads(config_line[len(" * Config: "):])["split_k"] == 2
    assert "using L1TileShape = Catlass::GemmShape<64, 256, 256>;" in text


def test_a_config_catlass_has_no_instantiation_for_is_one_line():
    with pytest.raises(ExportError) as err:
        catlass_header({**default_config(), "pipeline": 0}, PROFILE, "fp16")
    assert str(err.value).startswith("catlass header: pipeline=0, l1_prefetch=1: ")
    assert "\n" not in str(err.value)


def test_export_writes_header_and_kb_keyed_by_shape(tmp_path: Path, capsys) -> None:
    spec = tmp_path / "spec.toml"
    spec.write_text(SPEC)
    url = f"sqlite:///{tmp_path / 'aoe.db'}"
    assert main(["--config", str(spec), "--storage", url, "--study-name", "c",
                 "--n-trials", "6", "--seed", "0", "--no-progress"]) == 0
    header, kb = tmp_path / "gemm.h", tmp_path / "kb.json"
    capsys.readouterr()
    assert main(["export", "--storage", url, "--study-name", "c", "--kb", str(kb),
                 "--catlass-header", str(header)]) == 0
    out = capsys.readouterr().out
    best = optuna.load_study(study_name="c", storage=url).best_trial.params
    text = header.read_text()
    l1_k = 64 * PROFILE.l1_k_steps
    assert f"using L1TileShape = Catlass::GemmShape<{best['tile_m']}, {best['tile_n']}, {l1_k}>;" \
        in text
    assert re.search(rf"GemmIdentityBlockSwizzle<3, {best['swizzle_direction']}>", text)
    assert f"constexpr uint32_t kSplitK = {best['split_k']};" in text
    assert f"wrote {header}: catlass {'splitk' if best['split_k'] > 1 else 'basic'} kernel" in out
    entries = json.loads(kb.read_text())["entries"]
    assert [(e["M"], e["K"], e["N"]) for e in entries] == [(64, 4096, 1024)]
    assert entries[0]["config"]["split_k"] == best["split_k"]
