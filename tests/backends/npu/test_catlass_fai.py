"""catlass's flash-attention-infer instantiation for a tuned decode or prefill tiling: the
header's template arguments and tuned constants read back, the counterpart table, the
refusals, and the build tree with its commands. No CANN and no catlass here: what is
checked is the text a compiler would see (docs/NPU.md, "Attention")."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aoe_optuna.backends.npu.catlass.args import CatlassArgError
from aoe_optuna.backends.npu.catlass.build import TEMPLATES, catlass_build_commands
from aoe_optuna.backends.npu.catlass.fai import (
    FAI_BENCH,
    FAI_HEADER,
    fai_args,
    fai_problem_args,
    render_fai_header,
    render_fai_project,
)
from aoe_optuna.backends.npu.sources import (
    BENCH_COMMON_FILE,
    HOST_NUMBERS_FILE,
    SHARED,
    RenderError,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.attention_space import config_of
from aoe_optuna.space.decode_attention import DecodeAttention, cann_default_tiling
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.space.prefill_attention_space import config_of as prefill_config_of
from aoe_optuna.space.prefill_attention_space import tiling_of as prefill_tiling_of

PROFILE = load_profile("Ascend910B2")
DECODE = DecodeAttention(batch=4, q_heads=28, kv_heads=4, head_dim=128, context=4096)
PREFILL = PrefillAttention(batch=1, q_heads=32, kv_heads=8, head_dim=96, seq_len=2048)


def header_of(problem, config, dtype="fp16") -> str:
    return render_fai_header(fai_args(problem, config, dtype, PROFILE))


def template_args(text: str, name: str) -> list[str]:
    """The template arguments of ``using <name> = X<...>;``, top level split."""
    body = re.search(rf"^using {name} = [\w:]+<(.*)>;$", text, flags=re.MULTILINE).group(1)
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            parts.append(body[start:i].strip())
            start = i + 1
    return parts + [body[start:].strip()]


def tuned_constants(text: str) -> dict[str, str]:
    ints = re.findall(r"^constexpr uint32_t kTuned(\w+) = (\d+);", text, flags=re.MULTILINE)
    names = re.findall(r'^constexpr const char \*kTuned(\w+) = "(\w+)";', text, flags=re.MULTILINE)
    return dict(ints + names)


def counterpart_rows(text: str) -> dict[str, tuple[str, str, bool]]:
    rows = re.findall(r"^ \*   (\w+)\s+tuned (\S+)\s+catlass runs (\S+)\s+"
                      r"(\(same\)|NO COUNTERPART)", text, flags=re.MULTILINE)
    return {p: (tuned, runs, mark == "(same)") for p, tuned, runs, mark in rows}


def test_decode_header_carries_the_tuned_tiling_and_the_paged_kernel() -> None:
    config = {"kv_split": 3, "block_tile": 1024, "l1_tile": 256, "l0_tile": 64, "pipeline": 1}
    text = header_of(DECODE, config, "bf16")
    assert tuned_constants(text) == {"KvSplit": "3", "BlockTile": "1024", "L1Tile": "256",
                                     "L0Tile": "64", "Pipeline": "1"}
    assert template_args(text, "L1TileShape") == ["128", "128", "128"]
    qk = template_args(text, "BlockMmadQK")
    assert qk[0] == "Catlass::Gemm::MmadAtlasA2FAIQK<true, false>"  # paged cache
    assert template_args(text, "FaiKernel")[-1] == "true"
    assert "using ElementQ = bfloat16_t;" in text and "#define AOE_INPUT_BF16 1" in text
    assert "#define AOE_FAI_MASK_TYPE 0" in text and "#define AOE_FAI_PAGED 1" in text
    rows = counterpart_rows(text)
    assert rows == {"kv_split": ("3", "1", False), "block_tile": ("1024", "512", False),
                    "l1_tile": ("256", "128", False), "l0_tile": ("64", "128", False),
                    "pipeline": ("1", "2", False), "kv_layout": ("BNSD", "BSND", False)}


def test_a_tiling_catlass_runs_as_is_is_marked_the_same() -> None:
    config = {"kv_split": 1, "block_tile": 512, "l1_tile": 128, "l0_tile": 128, "pipeline": 2}
    shape = DecodeAttention(batch=4, q_heads=28, kv_heads=4, head_dim=128, context=4096,
                            kv_layout="BSND")
    assert all(same for _, _, same in counterpart_rows(header_of(shape, config)).values())


def test_prefill_header_is_unpaged_causal_with_the_head_dim_as_l1_k() -> None:
    config = prefill_config_of(prefill_tiling_of(
        {"q_tile": 64, "kv_tile": 1024, "l1_tile": 256, "pipeline": 2, "dealing": "balanced"}))
    text = header_of(PREFILL, config)
    assert tuned_constants(text) == {"QTile": "64", "KvTile": "1024", "L1Tile": "256",
                                     "Pipeline": "2", "Dealing": "balanced"}
    assert template_args(text, "L1TileShape") == ["128", "128", "96"]
    assert template_args(text, "BlockMmadPVTail")[0] == (
        "Catlass::Gemm::MmadAtlasA2FAITailPV<false, false>")
    assert "#define AOE_FAI_MASK_TYPE 1" in text and "#define AOE_FAI_PAGED 0" in text
    assert counterpart_rows(text)["dealing"] == ("balanced", "cyclic", False)
    assert counterpart_rows(text)["pipeline"] == ("2", "2", True)
    full = PrefillAttention(batch=1, q_heads=32, kv_heads=8, head_dim=96, seq_len=2048,
                            causal=False)
    assert "#define AOE_FAI_MASK_TYPE 0" in header_of(full, config)


@pytest.mark.parametrize(("problem", "dtype", "message"), [
    (DecodeAttention(1, 8, 8, 128, 1024, page_tokens=64), "fp16",
     "page_tokens 64: catlass's flash attention runs 128-token pages only"),
    (PrefillAttention(1, 8, 8, 72, 512), "fp16", "head_dim 72: catlass's flash attention "
     "needs a multiple of 16"),
    (PrefillAttention(1, 8, 8, 1024, 512), "fp16", "take 1536 KiB, L1 has 512 KiB"),
    (DECODE, "int8", "dtype int8: catlass's flash attention implements"),
])
def test_what_catlass_cannot_run_is_one_line(problem, dtype, message) -> None:
    config = (config_of(cann_default_tiling(PROFILE, problem))
              if isinstance(problem, DecodeAttention) else
              {"q_tile": 128, "kv_tile": 512, "l1_tile": 128, "pipeline": 1, "dealing": "cyclic"})
    with pytest.raises(CatlassArgError, match=re.escape(message)) as err:
        fai_args(problem, config, dtype, PROFILE)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("build_system", ["asc", "legacy"])
def test_build_tree_and_commands(tmp_path: Path, build_system: str) -> None:
    args = fai_args(DECODE, config_of(cann_default_tiling(PROFILE, DECODE)), "fp16", PROFILE)
    files = render_fai_project(args, PROFILE, "npu", build_system)
    assert set(files) == {FAI_HEADER, FAI_BENCH, BENCH_COMMON_FILE, HOST_NUMBERS_FILE,
                          "CMakeLists.txt"}
    cmake = files["CMakeLists.txt"]
    assert not re.search(r"@[A-Z_]+@", cmake)
    assert "add_executable(fai_bench catlass_fai_bench.cpp)" in cmake
    assert "${CATLASS_HOME}/examples/23_flash_attention_infer" in cmake
    assert "install(TARGETS fai_bench RUNTIME DESTINATION bin)" in cmake
    if build_system == "legacy":  # cube and vector work: the whole AI core
        assert "--cce-aicore-arch=dav-c220>" in cmake
    bench = files[FAI_BENCH]
    assert '#include "aoe_catlass_fai.h"' in bench and '#include "fai_tiling.cpp"' in bench
    assert "aoe_catlass_fai::FaiKernel kernel;" in bench
    home = tmp_path / "catlass"
    assert catlass_build_commands(home, args, "npu")[0] == [
        "cmake", "-S", ".", "-B", "build", f"-DCATLASS_HOME={home}", "-DCATLASS_ARCH=2201",
        "-DRUN_MODE=npu", "-DCMAKE_BUILD_TYPE=Release"]
    assert fai_problem_args(DECODE) == ["4", "1", "4096", "28", "4"]
    assert fai_problem_args(PREFILL)[:3] == ["1", "2048", "2048"]
    with pytest.raises(RenderError, match="run_mode 'cpu'"):
        render_fai_project(args, PROFILE, "cpu")


def test_the_host_program_reports_in_the_gemm_programs_terms() -> None:
    """results.py reads ok / accuracy / runtime / usage and ``max_abs_err``: a wrong O
    must read as an accuracy failure, not as an unknown status."""
    bench = TEMPLATES.text(FAI_BENCH) + SHARED.text(BENCH_COMMON_FILE)
    statuses = set(re.findall(r'\\"status\\": \\"(\w+)\\"', bench))
    for passed, failed in re.findall(r'ok \? "(\w+)" : "(\w+)"', bench):
        statuses |= {passed, failed}
    assert statuses == {"runtime", "usage", "ok", "accuracy"}
    assert '\\"max_abs_err\\": ' in bench
