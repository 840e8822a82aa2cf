"""Rewriting a kernel source's tunable declarations with a config."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from aoe_optuna.backends.npu.simple_gemm.kernel import kernel_source_path
from aoe_optuna.export.kernel_source import (
    HEADER_BEGIN,
    HEADER_END,
    ExportError,
    ExportInfo,
    default_names,
    export_kernel,
    rewrite_source,
)

REPO = Path(__file__).resolve().parents[2]
REAL_KERNEL = kernel_source_path()  # the npu backend's kernel, as the package ships it

FIXTURE = """\
// gemm fixture: TILE_M = 1 in this comment must stay
/* block comment: int tile_m = 3; #define TILE_N 5 */
#include "kernel_operator.h"

constexpr uint32_t TILE_M = 64U;   // rows per block
static constexpr int32_t kTileK{32};
#define TILE_N (128)
const bool L1_PREFETCH = true;
int output_align = 0;
#  define PIPELINE 2  /* double buffer */
constexpr Layout LAYOUT = Layout::ROW_MAJOR;
constexpr bool QUANTIZATION = false;
constexpr int UNROLL_FACTOR = 0x4;
const char *note = "int tile_m = 5;";
constexpr auto raw = R"x(int tile_n = 7;)x";
constexpr uint32_t L1_K = TILE_M * 4;  // derived, not tunable

void Kernel() {
    tile_m = 32;  // an assignment, not a declaration
}
"""

BEST = {
    "tile_m": 128, "tile_k": 64, "tile_n": 256, "l1_prefetch": 0, "output_align": 1,
    "pipeline": "single_buffer", "layout": "z_major", "quantization": True, "unroll_factor": 8,
    "opt_level": "O3", "schedule": "throughput",
}
INFO = ExportInfo(study="qwen-decode", storage="sqlite:///aoe.db", trial=41, value=1500.0,
                  baseline=1200.0)


def changed_lines(old: str, new: str) -> dict[str, str]:
    """old line -> new line, for the lines that differ (the header is removed first)."""
    body = new.split(HEADER_END + "\n", 1)[1]
    old_lines, new_lines = old.splitlines(), body.splitlines()
    assert len(old_lines) == len(new_lines)
    return {a: b for a, b in zip(old_lines, new_lines, strict=True) if a != b}


def test_every_form_rewritten_and_nothing_else():
    result = rewrite_source(FIXTURE, BEST, info=INFO, source_name="gemm.cpp")
    assert changed_lines(FIXTURE, result.text) == {
        "constexpr uint32_t TILE_M = 64U;   // rows per block":
            "constexpr uint32_t TILE_M = 128U;   // rows per block",
        "static constexpr int32_t kTileK{32};": "static constexpr int32_t kTileK{64};",
        "#define TILE_N (128)": "#define TILE_N (256)",
        "const bool L1_PREFETCH = true;": "const bool L1_PREFETCH = false;",
        "int output_align = 0;": "int output_align = 1;",
        "#  define PIPELINE 2  /* double buffer */": "#  define PIPELINE 1  /* double buffer */",
        "constexpr Layout LAYOUT = Layout::ROW_MAJOR;":
            "constexpr Layout LAYOUT = Layout::Z_MAJOR;",
        "constexpr bool QUANTIZATION = false;": "constexpr bool QUANTIZATION = true;",
        "constexpr int UNROLL_FACTOR = 0x4;": "constexpr int UNROLL_FACTOR = 0x8;",
    }
    by_param = {c.param: c for c in result.changes}
    assert set(by_param) == set(BEST) - {"opt_level", "schedule"}
    tile_m = by_param["tile_m"]
    assert (tile_m.name, tile_m.form, tile_m.line, tile_m.old, tile_m.new) == (
        "TILE_M", "variable", 5, "64U", "128U")
    assert result.text.splitlines()[tile_m.new_line - 1].startswith("constexpr uint32_t TILE_M")
    assert by_param["tile_n"].form == "define"
    assert by_param["tile_k"].name == "kTileK"


def test_compile_options_go_to_the_header_and_flags_not_the_source():
    result = rewrite_source(FIXTURE, BEST, info=INFO)
    assert result.compile_options == {"opt_level": "O3", "schedule": "throughput"}
    assert result.build_flags == ("-O3", "-mllvm", "-misched=ilpmax")  # the backend's flags
    header = result.text.split(HEADER_END)[0]
    assert "build flags: -O3 -mllvm -misched=ilpmax" in header
    assert "schedule=throughput" in header and "by hand" not in header


def test_header_records_study_config_and_gain():
    result = rewrite_source(FIXTURE, BEST, info=INFO)
    lines = result.text.splitlines()
    assert lines[0] == HEADER_BEGIN
    header = "\n".join(lines[: lines.index(HEADER_END) + 1])
    assert 'study "qwen-decode"' in header and 'storage "sqlite:///aoe.db"' in header
    assert "trial 41" in header
    assert "gain +25.0%" in header and "1500 tokens/s" in header and "baseline 1200" in header
    for name, value in (("tile_m", "128"), ("layout", "z_major"), ("quantization", "true")):
        assert f"{name}={value}" in header
    assert all(line.startswith("//") and len(line) <= 100 for line in header.splitlines())


def test_header_free_text_stays_on_comment_lines_and_hides_passwords():
    info = ExportInfo(study="evil\n#define TILE_M 1\\", storage="postgresql://me:secret@db/x")
    result = rewrite_source(FIXTURE, {"tile_m": 16}, info=info)
    header = result.text.split(HEADER_END)[0]
    assert all(line.startswith("//") for line in header.splitlines())
    assert "secret" not in result.text and "postgresql://me:***@db/x" in header
    assert '"evil\\n#define TILE_M 1\\\\"' in header


def test_idempotent_and_a_new_export_replaces_the_old_header():
    once = rewrite_source(FIXTURE, BEST, info=INFO).text
    twice = rewrite_source(once, BEST, info=INFO)
    assert twice.text == once
    assert all(not c.changed for c in twice.changes)
    other = {**BEST, "tile_m": 32, "layout": "col_major"}
    via_export = rewrite_source(once, other, info=INFO).text
    assert via_export == rewrite_source(FIXTURE, other, info=INFO).text
    assert via_export.count(HEADER_BEGIN) == 1


def test_without_info_the_header_still_has_the_config():
    text = rewrite_source("#define TILE_M 64\n", {"tile_m": 16}).text
    assert text == f"{HEADER_BEGIN}\n// config: tile_m=16\n{HEADER_END}\n#define TILE_M 16\n"


def test_missing_parameter_names_file_parameter_and_forms():
    with pytest.raises(ExportError) as err:
        rewrite_source(FIXTURE, {"tile_m": 128, "l0c_split": 2}, source_name="gemm.cpp")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("gemm.cpp: parameter 'l0c_split' is not declared")
    assert "l0c_split|L0C_SPLIT|kL0cSplit" in msg and "#define" in msg


def test_declarations_in_comments_strings_and_assignments_do_not_count():
    src = '// int tile_m = 1;\nconst char *s = "int tile_m = 2;";\nvoid f() { tile_m = 3; }\n'
    with pytest.raises(ExportError, match="'tile_m' is not declared"):
        rewrite_source(src, {"tile_m": 128})


def test_duplicate_declaration_is_ambiguous():
    src = "#ifdef BIG\n#define TILE_M 256\n#else\nconstexpr int tile_m = 64;\n#endif\n"
    with pytest.raises(ExportError) as err:
        rewrite_source(src, {"tile_m": 128}, source_name="k.cpp")
    assert str(err.value).startswith("k.cpp: parameter 'tile_m' is declared 2 times")
    assert "line 2 (TILE_M), line 4 (tile_m)" in str(err.value)


def test_aliases_replace_the_default_names():
    src = "#define TILE_M 256\nconstexpr uint32_t baseM = 64;\n"
    result = rewrite_source(src, {"tile_m": 128}, aliases={"tile_m": "baseM"})
    assert "constexpr uint32_t baseM = 128;" in result.text
    assert "#define TILE_M 256" in result.text
    with pytest.raises(ExportError, match="aliases given for"):
        rewrite_source(src, {"tile_m": 128}, aliases={"tile_k": "baseK"})
    with pytest.raises(ExportError, match="expected identifiers"):
        rewrite_source(src, {"tile_m": 128}, aliases={"tile_m": "base M; int x"})


def test_default_names():
    assert default_names("tile_m") == ("tile_m", "TILE_M", "kTileM")
    assert default_names("l1_prefetch") == ("l1_prefetch", "L1_PREFETCH", "kL1Prefetch")


@pytest.mark.parametrize(
    ("declaration", "value", "expected"),
    [
        ("constexpr bool QUANTIZATION = false;", True, "constexpr bool QUANTIZATION = true;"),
        ("constexpr bool QUANTIZATION = 0;", True, "constexpr bool QUANTIZATION = true;"),
        ("constexpr int QUANTIZATION = 0;", True, "constexpr int QUANTIZATION = 1;"),
        ("#define QUANTIZATION 1", False, "#define QUANTIZATION 0"),
        ("#define QUANTIZATION true", "false", "#define QUANTIZATION false"),
        ("const bool l1_prefetch = true;", 0, "const bool l1_prefetch = false;"),
    ],
)
def test_bools_take_the_form_of_the_declaration(declaration, value, expected):
    param = "quantization" if "QUANT" in declaration else "l1_prefetch"
    text = rewrite_source(declaration + "\n", {param: value}).text
    assert text.splitlines()[-1] == expected


@pytest.mark.parametrize(
    ("declaration", "value", "expected"),
    [
        ("constexpr uint32_t LAYOUT = 0;", "z_major", "constexpr uint32_t LAYOUT = 2;"),
        ('constexpr const char *LAYOUT = "row_major";', "z_major",
         'constexpr const char *LAYOUT = "z_major";'),
        ("#define LAYOUT LAYOUT_ROW_MAJOR", "col_major", "#define LAYOUT LAYOUT_COL_MAJOR"),
        ("constexpr Layout kLayout = Layout::kRowMajor;", "z_major",
         "constexpr Layout kLayout = Layout::kZMajor;"),
        ("constexpr uint32_t LAYOUT = row_major;", "z_major",
         "constexpr uint32_t LAYOUT = z_major;"),
        ("#define PIPELINE PIPE_DOUBLE_BUFFER", 0, "#define PIPELINE PIPE_NONE"),
        ("#define PIPELINE 2", "single_buffer", "#define PIPELINE 1"),
    ],
)
def test_names_take_the_form_of_the_declaration(declaration, value, expected):
    param = "layout" if "ayout" in declaration or "LAYOUT" in declaration else "pipeline"
    text = rewrite_source(declaration + "\n", {param: value}).text
    assert text.splitlines()[-1] == expected


@pytest.mark.parametrize(
    ("source", "config", "message"),
    [
        ("constexpr int TILE_M = BASE * 2;\n", {"tile_m": 64}, "not a plain literal"),
        ("#define TILE_M\n", {"tile_m": 64}, "not a plain literal"),
        ("constexpr int TILE_M = true;\n", {"tile_m": 64}, "expected an integer literal"),
        ("constexpr bool TILE_M = 1;\n", {"tile_m": 64}, "expected an integer literal"),
        ("constexpr int TILE_M = 64;\n", {"tile_m": "64; system()"}, "tile_m takes integers"),
        ("constexpr int TILE_M = 64;\n", {"tile_m": 64.5}, "tile_m takes integers"),
        ("#define PIPELINE 2\n", {"pipeline": 5}, "pipeline takes 0/1/2"),
        ("#define LAYOUT LAYOUT_WEIRD\n", {"layout": "z_major"}, "names none of"),
        ("#define LAYOUT true\n", {"layout": "z_major"}, "expected a code, a name"),
        ('#define L1_PREFETCH "yes"\n', {"l1_prefetch": 1}, "expected true/false or 0/1"),
        ("constexpr uint8_t TILE_M = 64;\n", {"tile_m": 512}, "does not fit its type uint8_t"),
        ("constexpr uint32_t UNROLL = 4;\n", {"UNROLL": -1}, "does not fit"),
        ("#define BLOCK 4\n", {"BLOCK": "wide"}, "only integers and booleans"),
    ],
)
def test_values_that_cannot_be_written(source, config, message):
    with pytest.raises(ExportError, match=message) as err:
        rewrite_source(source, config, source_name="k.cpp")
    assert str(err.value).startswith("k.cpp") and "\n" not in str(err.value)


def test_parameters_the_engine_does_not_know_take_ints_and_bools():
    src = "constexpr int block_size_x = 32;\n#define USE_SHARED 0\n"
    text = rewrite_source(src, {"block_size_x": 128, "USE_SHARED": True}).text
    assert "constexpr int block_size_x = 128;" in text and "#define USE_SHARED 1" in text


def test_crlf_and_bom_are_kept():
    src = "\ufeff// k\r\nconstexpr int TILE_M = 64;\r\n"
    text = rewrite_source(src, {"tile_m": 16}).text
    assert text.startswith("\ufeff" + HEADER_BEGIN + "\r\n")
    assert text.endswith("// k\r\nconstexpr int TILE_M = 16;\r\n")
    assert "\n" not in text.replace("\r\n", "")
    assert rewrite_source(text, {"tile_m": 16}).text == text


def test_export_kernel_writes_the_file(tmp_path):
    source = tmp_path / "gemm.cpp"
    source.write_text(FIXTURE)
    os.chmod(source, 0o644)
    output = tmp_path / "optimized_kernel.cpp"
    result = export_kernel(source, output, BEST, info=INFO)
    assert output.read_text() == result.text
    assert stat.S_IMODE(output.stat().st_mode) == 0o666 & ~_umask()
    assert source.read_text() == FIXTURE
    assert [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")] == []
    with pytest.raises(ExportError, match="cannot read the kernel source"):
        export_kernel(tmp_path / "missing.cpp", output, BEST)


def test_the_real_ascend_c_kernel():
    text = REAL_KERNEL.read_text(encoding="utf-8")
    config = {name: value for name, value in BEST.items()}
    config["quantization"] = False  # the kernel asserts its int8 path is absent
    result = rewrite_source(text, config, info=INFO, source_name=str(REAL_KERNEL))
    source_params = set(config) - {"opt_level", "schedule"}
    assert {c.param for c in result.changes} == source_params
    lines = result.text.splitlines()
    for change in result.changes:
        assert change.new in lines[change.new_line - 1]
    assert rewrite_source(result.text, config, info=INFO).text == result.text
    assert result.build_flags == ("-O3", "-mllvm", "-misched=ilpmax")


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask
