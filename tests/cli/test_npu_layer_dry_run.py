"""The shipped npu layer spec in the dry run, as a machine with the toolkit would run it:
`aoe-tune operators --dry-run` plans a study per operator, each attention and vector
kernel timed by its kind's program; `aoe-tune doctor --dry-run` writes each kind's build
tree and prints every command one measurement runs. No toolkit and no catlass here: the
commands name $ASCEND_HOME_PATH and $CATLASS_HOME in their place. A spec of MLA decode with
MoE gating, and one of causal prefill, cover the kinds Qwen2.5-7B's decode layer lacks."""

from __future__ import annotations

import json
from pathlib import Path

import json5
import pytest

from aoe_optuna.cli.main import main as aoe_tune

ROOT = Path(__file__).resolve().parents[2]
NPU_LAYER = ROOT / "studies" / "qwen25_7b_decode_layer_npu_910b2.json"
QWEN_KINDS = {"decode_attention": "fai_bench", "add_rmsnorm": "vector_bench",
              "rmsnorm": "vector_bench", "rope": "vector_bench", "swiglu": "vector_bench"}


@pytest.fixture(autouse=True)
def _no_toolkit(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "CATLASS_HOME",
                 "ASCEND_RT_VISIBLE_DEVICES"):
        monkeypatch.delenv(name, raising=False)


def _commands(out: list[str], tree: Path) -> list[str]:
    """The shell lines from ``cd <tree>`` to the next comment block."""
    start = out.index(f"cd {tree}")
    end = next((i for i in range(start + 1, len(out)) if out[i].startswith("# ")), len(out))
    return out[start:end]


def _check_doctor(spec: Path, out_dir: Path, kinds: dict[str, str],
                  capsys: pytest.CaptureFixture[str]) -> None:
    code = aoe_tune(["doctor", "--dry-run", "--config", str(spec), "--out", str(out_dir)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, "\n".join(out)
    missing = [ln for ln in out if ln.startswith("# catlass not found")]
    assert len(missing) == 1, missing  # said once, for the GEMM's and the kinds' commands
    for name, exe in kinds.items():
        tree = out_dir / name
        assert (tree / "CMakeLists.txt").is_file() and (tree / "aoe_bench_common.h").is_file()
        lines = _commands(out, tree)
        assert lines[0] == f"cd {tree}"
        steps = [ln for ln in lines if ln.startswith("cmake ")]
        assert [s.split()[1] for s in steps] == ["-S", "--build", "--install"], name
        assert any(ln.startswith("export LD_LIBRARY_PATH=") for ln in lines), name
        assert lines[-2] == "unset ASCEND_RT_VISIBLE_DEVICES"
        run = lines[-1].split()
        assert run[0] == f"{tree}/out/bin/{exe}" and run[-7:] == [
            "5", "10", "5", "50", "0.02", "2.0", "0"], name  # the backend's timing arguments


def test_the_shipped_npu_layer_spec_plans_and_prints_every_kind(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert aoe_tune(["operators", "--config", str(NPU_LAYER), "--dry-run",
                     "--storage", f"sqlite:///{tmp_path / 'never.db'}"]) == 0
    plan = capsys.readouterr().out.splitlines()
    studies = [ln for ln in plan if ln.startswith("study ")]
    gemms = [ln for ln in studies if ": gemm, measured by the npu backend" in ln]
    assert len(gemms) == 5  # qkv, o, gate_up, down, lm_head
    for name, exe in QWEN_KINDS.items():
        (line,) = [ln for ln in studies if f": {name}, timed on the npu backend" in ln]
        assert f"/out/bin/{exe} " in line
    assert plan[-1].startswith("# 5 of 5 attention/vector/gating kernels timed")
    assert not (tmp_path / "never.db").exists()
    _check_doctor(NPU_LAYER, tmp_path / "tree", QWEN_KINDS, capsys)


@pytest.mark.parametrize(("workload", "kinds"), [
    ({"hf_config": str(ROOT / "studies" / "models" / "deepseek-v2-lite.json"),
      "phase": "decode", "batch": 1, "seq_len": 1024},
     {"mla_decode_attention": "mla_bench", "moe_gating": "gating_bench"}),
    ({"model": "qwen2.5-7b", "phase": "prefill", "batch": 1, "seq_len": 512},
     {"prefill_attention": "fai_bench"}),
])
def test_mla_gating_and_prefill_print_their_programs_too(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], workload, kinds) -> None:
    doc = json5.loads(NPU_LAYER.read_text())
    doc.pop("baseline")  # the Qwen GEMMs' catlass default: the space's defaults do
    doc["workload"] = {**workload, "attention": "tuned", "vector_kernels": "tuned"}
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(doc))
    _check_doctor(spec, tmp_path / "tree", kinds, capsys)
