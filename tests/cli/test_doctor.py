"""``aoe-tune doctor`` on toolkit trees of CANN 8.0, 8.1 and 8.5 (tests/backends/npu/
toolkit_trees.py), on a machine without one, and its dry run of a spec."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from aoe_optuna.backends.npu import toolkit_layout as layout
from aoe_optuna.backends.npu.requirements import device_findings, soc_name
from aoe_optuna.cli.doctor import main as doctor
from aoe_optuna.cli.main import main as aoe_tune
from tests.backends.npu.toolkit_trees import SOC, make_catlass, make_toolkit

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "backends" / "npu" / "data"
NO_DEFAULT_TOOLKIT = not any(Path(os.path.expanduser(p)).exists() for p in layout.DEFAULT_HOMES)


@pytest.fixture(autouse=True)
def _no_toolkit_in_env(monkeypatch):
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "CATLASS_HOME",
                "ASCEND_RT_VISIBLE_DEVICES"):
        monkeypatch.delenv(var, raising=False)


def report(capsys, *argv: str) -> tuple[int, list[str]]:
    code = doctor(list(argv))
    return code, capsys.readouterr().out.splitlines()


def lines_of(out: list[str], topic: str) -> list[str]:
    return [ln for ln in out if ln[8:].startswith(topic)]


@pytest.mark.parametrize("version", ["8.0.RC3", "8.1.RC1", "8.5.0"])
def test_each_release_is_ready_for_the_simulator(tmp_path, capsys, version):
    home = make_toolkit(tmp_path, version)
    code, out = report(capsys, "--cann", str(home), "--mode", "sim", "--soc", SOC)
    assert code == 0, "\n".join(out)
    assert lines_of(out, "toolkit")[0].startswith(f"ok      toolkit          {home}")
    assert f"CANN {version}" in lines_of(out, "version")[0]
    assert all(ln.startswith("ok") for ln in lines_of(out, "mode sim"))
    assert all(ln.startswith("ok") for ln in lines_of(out, "mode cpu"))
    log = layout.LOG_LIBRARY.find(home).name
    assert any(log in ln for ln in lines_of(out, "mode npu"))
    assert lines_of(out, "timing msprof")[0].startswith("ok")
    assert out[-1].startswith(f"run_mode sim ({SOC}): ready")


def test_what_is_missing_is_named_with_the_remedy(tmp_path, capsys):
    home = make_toolkit(tmp_path, "8.1.RC1", simulator=False, cpu_twin=False, msprof=False)
    code, out = report(capsys, "--cann", str(home), "--mode", "sim", "--soc", SOC)
    assert code == 1
    sim = [ln for ln in lines_of(out, "mode sim") if ln.startswith("MISSING")]
    assert any(f"tools/simulator/{SOC}/lib/libruntime_camodel.so" in ln
               and "-> install the CANN toolkit package" in ln for ln in sim)
    cpu = [ln for ln in lines_of(out, "mode cpu") if ln.startswith("MISSING")]
    assert any("tools/tikicpulib/lib/cmake/tikicpulib-config.cmake" in ln for ln in cpu)
    assert lines_of(out, "timing msprof")[0].startswith("MISSING")
    assert "kernel catlass" in "\n".join(out) and "git clone" in "\n".join(out)
    assert out[-1].startswith(f"run_mode sim ({SOC}): not ready")
    # npu mode: no npu-smi and no driver on this machine
    code, out = report(capsys, "--cann", str(home), "--soc", SOC)
    assert code == 1 and lines_of(out, "devices")[0].startswith("MISSING")


@pytest.mark.parametrize(("version", "legacy", "verdict"), [
    ("8.1.RC1", True, "catlass needs CANN >= 8.2.RC1"),
    ("8.2.RC1", False, "needs CANN >= 8.5.0"),
    ("8.2.RC1", True, "lib64 libraries catlass links: all present"),
    ("8.5.0", False, "ASC language CMake package"),
])
def test_catlass_findings_follow_the_toolkit(tmp_path, capsys, version, legacy, verdict):
    home = make_toolkit(tmp_path, version)
    catlass = make_catlass(tmp_path / "catlass", legacy)
    _, out = report(capsys, "--cann", str(home), "--catlass", str(catlass), "--soc", SOC)
    assert any(verdict in ln for ln in lines_of(out, "kernel catlass")), "\n".join(out)


@pytest.mark.skipif(not NO_DEFAULT_TOOLKIT, reason="a toolkit is installed at a default place")
def test_no_toolkit_says_what_to_install(capsys):
    code, out = report(capsys)
    assert code == 1 and out[0].startswith("MISSING toolkit")
    assert "Ascend-cann-toolkit" in out[0] and "set_env.sh" in out[0]


def test_devices_and_their_socs_from_npu_smi():
    listing = (DATA / "npu_smi_info_l.txt").read_text()
    board = (DATA / "npu_smi_board_910b3.txt").read_text()

    def run(argv: list[str]) -> str | None:
        return listing if argv[:3] == ["npu-smi", "info", "-l"] else board

    found = device_findings(run)
    assert found[0].ok and found[0].text == "2 NPU(s) - 0: Ascend910B3, 1: Ascend910B3"
    assert soc_name((DATA / "npu_smi_board_910_93.txt").read_text()) == "Ascend910_9382"
    assert not device_findings(lambda argv: None)[0].ok
    assert not device_findings(lambda argv: "Total Count : 0\n")[0].ok


def npu_spec(tmp_path: Path, **backend: str) -> Path:
    text = (ROOT / "studies" / "gemm_4096_910b2.toml").read_text()
    options = "".join(f'{k} = "{v}"\n' for k, v in backend.items())
    text = text.replace('name = "simulator"\nnoise = 0.0\nseed = 0\n', f'name = "npu"\n{options}')
    assert 'name = "npu"' in text
    spec = tmp_path / "npu.toml"
    spec.write_text(text)
    return spec


def test_dry_run_writes_the_tree_and_prints_every_command(tmp_path, capsys):
    home = make_toolkit(tmp_path / "cann", "8.1.RC1", soc="Ascend910B2")
    spec = npu_spec(tmp_path, cann=str(home), run_mode="sim", timing="msprof")
    out_dir = tmp_path / "tree"
    code = aoe_tune(["doctor", "--dry-run", "--config", str(spec), "--out", str(out_dir)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, "\n".join(out)
    assert sorted(p.name for p in out_dir.iterdir()) == [
        "CMakeLists.txt", "aoe_bench_common.h", "aoe_gemm_config.h", "gemm_kernel.cpp",
        "main.cpp"]  # nothing built
    assert out[0] == f"# toolkit {home} (CANN 8.1.RC1, by backend.cann)"
    assert "# kernel simple, run_mode sim, timing msprof, soc Ascend910B2" in out
    assert "tile_m=128" in next(ln for ln in out if ln.startswith("# config"))  # the baseline
    commands = [ln for ln in out if not ln.startswith("#")]
    assert commands[0] == f"cd {out_dir}"
    configure = next(ln for ln in commands if ln.startswith("cmake -S"))
    assert f"-DASCEND_CANN_PACKAGE_PATH={home}" in configure and "-DRUN_MODE=sim" in configure
    sim_lib = home / "tools" / "simulator" / "Ascend910B2" / "lib"
    assert f'export LD_LIBRARY_PATH="{sim_lib}:{out_dir}/out/lib:' in "\n".join(commands)
    assert "unset ASCEND_RT_VISIBLE_DEVICES" in commands
    assert commands[-1] == (
        f"{home}/tools/profiler/bin/msprof op simulator --soc-version=Ascend910B2 "
        f"--output={out_dir}/msprof {out_dir}/out/bin/gemm_bench 4096 4096 4096 5 10 5 50 "
        "0.02 2.0 0")


def test_dry_run_without_a_toolkit_names_the_variable(tmp_path, capsys):
    if not NO_DEFAULT_TOOLKIT:
        pytest.skip("a toolkit is installed at a default place")
    code = doctor(["--dry-run", "--config", str(npu_spec(tmp_path)), "--out", str(tmp_path / "t")])
    out = capsys.readouterr().out
    assert code == 0 and "CANN toolkit not found" in out
    assert '"-DASCEND_CANN_PACKAGE_PATH=$ASCEND_HOME_PATH"' in out


@pytest.mark.parametrize(("argv", "message"), [
    (["--dry-run"], "--dry-run: expected --config SPEC"),
    (["--config", "x.toml"], "--config: expected together with --dry-run"),
    (["--dry-run", "--config", str(ROOT / "studies" / "gemm_4096_910b2.toml")],
     "backend.name: expected 'npu' for a dry run, got 'simulator'"),
    (["--mode", "gpu"], "argument --mode: invalid choice"),
])
def test_bad_input_is_one_line_and_exit_2(tmp_path, capsys, argv, message):
    assert doctor(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("aoe-tune doctor: error: ") and message in err
    assert err.count("\n") == 1 and not (tmp_path / "aoe-npu-dry-run").exists()


def test_dry_run_of_a_bad_backend_option_is_one_line(tmp_path, capsys):
    spec = npu_spec(tmp_path, run_mode="gpu")
    assert doctor(["--dry-run", "--config", str(spec), "--out", str(tmp_path / "t")]) == 2
    err = capsys.readouterr().err
    assert "run_mode" in err and err.count("\n") == 1 and not (tmp_path / "t").exists()


def test_dry_run_of_a_spec_tuning_attention_writes_the_catlass_attention_tree(tmp_path, capsys):
    home = make_toolkit(tmp_path / "cann", "8.5.0", soc="Ascend910B2")
    catlass = make_catlass(tmp_path / "catlass", legacy=False)
    spec = tmp_path / "attention.json"
    spec.write_text(json.dumps({
        "op_name": "Gemm", "hardware": {"soc": "Ascend910B2"},
        "search_space": {"tile_m": [64, 128], "tile_n": [128], "tile_k": [64]},
        "workload": {"model": "qwen2.5-7b", "phase": "decode", "batch": 1, "seq_len": 1024,
                     "attention": "tuned"},
        "backend": {"name": "npu", "cann": str(home), "catlass": str(catlass)}}))
    out_dir = tmp_path / "tree"
    code = aoe_tune(["doctor", "--dry-run", "--config", str(spec), "--out", str(out_dir)])
    out = capsys.readouterr().out.splitlines()
    assert code == 0, "\n".join(out)
    tree = out_dir / "decode_attention"
    assert sorted(p.name for p in tree.iterdir()) == [
        "CMakeLists.txt", "aoe_bench_common.h", "aoe_catlass_fai.h", "aoe_host_numbers.h",
        "catlass_fai_bench.cpp"]
    assert any(ln.startswith("# decode_attention b1-q28-kv4-d128-s1024: config block_tile=")
               for ln in out)
    assert "# kv_layout=BNSD: no catlass counterpart (it runs BSND)" in out
    assert f"cd {tree}" in out
    assert f"cmake -S . -B build -DCATLASS_HOME={catlass} -DCATLASS_ARCH=2201 -DRUN_MODE=npu " \
        "-DCMAKE_BUILD_TYPE=Release" in out
    assert out[-1].startswith(f"{tree}/out/bin/fai_bench 1 1 1024 28 4 ")
