"""Knowledge base: entries, merge, atomic save, lookup, and the C header against Python."""

from __future__ import annotations

import json
import math
import os
import random
import shutil
import subprocess
from pathlib import Path

import pytest

from aoe_optuna.export.kb import KnowledgeBase
from aoe_optuna.export.kb_c_header import C_FIELDS, c_header, write_c_header
from aoe_optuna.export.kb_entry import KBError, make_entry, validate_entry
from aoe_optuna.export.kb_lookup import lookup
from aoe_optuna.space.params import KNOWN_PARAMS, LAYOUTS, to_code

SOC = "Ascend910B3"
CC = shutil.which("gcc")
CXX = shutil.which("g++")


def entry(M=1, K=3584, N=4608, value=100.0, layout="row_major", soc=SOC, dtype="fp16",  # noqa: N803
          study="s", objective="tokens/s", **config):
    cfg = {"tile_m": 64, "tile_k": 64, "tile_n": 128, "pipeline": 2, **config}
    return make_entry(soc, "gemm", dtype, M, K, N, layout, cfg, value, 0.1, study,
                      "sqlite:///aoe.db", objective=objective, date="2025-01-02T03:04:05+00:00")


# --- entries ------------------------------------------------------------------------------------


def test_make_entry_is_canonical_and_hides_passwords():
    e = make_entry(SOC, "gemm", "bf16", 16, 3584, 512, "z_major",
                   {"tile_m": 32.0, "pipeline": "double_buffer", "quantization": "true",
                    "opt_level": "o3", "layout": "z_major"},
                   1234.5, 0.25, "qwen-decode", "postgresql://me:secret@db:5432/aoe")
    assert e["config"] == {"tile_m": 32, "pipeline": 2, "quantization": True,
                           "opt_level": "O3", "layout": "z_major"}
    assert e["storage"] == "postgresql://me:***@db:5432/aoe"
    assert (e["M"], e["K"], e["N"], e["layout"], e["gain"]) == (16, 3584, 512, "z_major", 0.25)
    assert e["objective"] == "tokens/s"
    assert e["date"].endswith("+00:00")  # default: now, UTC, ISO 8601


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("dtype", "fp8", "dtype: expected one of"),
        ("M", 0, "M: expected an integer"),
        ("K", True, "K: expected an integer"),
        ("N", 2.0, "N: expected an integer"),
        ("layout", "diagonal", "layout: expected one of"),
        ("soc", 'Ascend"910', "soc: expected a name"),
        ("op", "", "op: expected a name"),
        ("config", {}, "config: expected a non-empty object"),
        ("config", {"tile_m": "big"}, "config.tile_m: tile_m takes integers"),
        ("config", {"layout": "col_major"}, "config.layout='col_major' differs"),
        ("config", {"x y": 1}, "got an unknown parameter 'x y'"),
        # not the GEMM's space: a name no kernel has, values past what a spec may tune
        ("config", {"bogus": 1}, r"config: expected the GEMM's parameters \(tile_m, .*\), "
                                 "got an unknown parameter 'bogus'"),
        ("config", {"tile_m": -5}, "config.tile_m: expected an integer from 1 to 4096"),
        ("config", {"tile_n": 100000}, "config.tile_n: expected an integer from 1 to 4096"),
        ("config", {"split_k": 0}, "config.split_k: expected an integer from 1 to 256"),
        ("config", {"unroll_factor": 2**40}, "config.unroll_factor: expected an integer from 0"),
        ("config", {"pipeline": 7}, "config.pipeline: pipeline takes 0/1/2"),
        ("value", float("nan"), "value: expected a finite number"),
        ("gain", float("inf"), "gain: expected a finite number or null"),
        ("study", "", "study: expected a non-empty text"),
        ("date", "yesterday", "date: expected an ISO 8601 date"),
    ],
)
def test_make_entry_rejects(field, value, message):
    args = {"soc": SOC, "op": "gemm", "dtype": "fp16", "M": 1, "K": 64, "N": 64,
            "layout": "row_major", "config": {"tile_m": 16}, "value": 1.0, "gain": None,
            "study": "s", "storage": None, "date": None, field: value}
    date = args.pop("date")
    with pytest.raises(KBError, match=message) as err:
        make_entry(**args, date=date)
    assert "\n" not in str(err.value)


# --- merge --------------------------------------------------------------------------------------


def test_merge_keeps_the_better_entry_and_says_which():
    kb = KnowledgeBase()
    first = kb.merge(entry(value=100.0, study="a"))
    assert first.outcome == "added" and first.new_won and len(kb) == 1
    better = kb.merge(entry(value=120.0, study="b"))
    assert better.outcome == "replaced" and better.new_won and better.other["study"] == "a"
    assert "replaced Ascend910B3/gemm/fp16 1x4608x3584 row_major: 120" in better.describe()
    worse = kb.merge(entry(value=90.0, study="c"))
    assert worse.outcome == "kept" and not worse.new_won and worse.entry["study"] == "b"
    tie = kb.merge(entry(value=120.0, study="d"))
    assert tie.outcome == "kept" and tie.entry["study"] == "b"
    assert [e["study"] for e in kb] == ["b"]
    other_shape = kb.merge(entry(M=16, value=1.0, study="e"))
    assert other_shape.outcome == "added" and len(kb) == 2


def test_merge_refuses_to_compare_different_objectives_unless_told():
    kb = KnowledgeBase()
    kb.merge(entry(value=100.0))
    with pytest.raises(KBError, match="another unit, not comparable") as err:
        kb.merge(entry(value=5.0, objective="TFLOPS"))
    assert "write it to another knowledge base file (--kb), or give --kb-replace" in str(
        err.value)
    forced = kb.merge(entry(value=5.0, objective="TFLOPS"), replace=True)
    assert forced.outcome == "replaced" and kb.entries()[0]["objective"] == "TFLOPS"
    assert forced.describe().endswith("(another figure: --kb-replace)")


# --- the file -----------------------------------------------------------------------------------


def test_save_and_load_round_trip(tmp_path):
    path = tmp_path / "kb.json"
    kb = KnowledgeBase()
    for e in (entry(M=16), entry(M=1), entry(M=1, layout="z_major", split_k=2)):
        kb.merge(e)
    kb.save(path)
    data = json.loads(path.read_text())
    assert data["format"] == "aoe-kb" and data["version"] == 1
    assert [(e["M"], e["layout"]) for e in data["entries"]] == [
        (1, "row_major"), (1, "z_major"), (16, "row_major")]
    again = KnowledgeBase.load(path)
    assert again.entries() == kb.entries()


def test_missing_file_is_an_empty_knowledge_base(tmp_path):
    assert len(KnowledgeBase.load(tmp_path / "absent.json")) == 0


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"format": "aoe-kb", "entries": [', "invalid JSON"),
        ("[1, 2]", 'expected an object with "format": "aoe-kb"'),
        ('{"format": "aoe-kb", "version": 9, "entries": []}', "version: expected 1"),
        ('{"format": "aoe-kb", "version": 1, "entries": {}}', "entries: expected a list"),
        ('{"format": "aoe-kb", "version": 1, "entries": [7]}', r"entries\[0\]: expected an object"),
        ('{"format": "aoe-kb", "version": 1, "entries": [{"soc": "x"}]}',
         r"entries\[0\]: missing op, dtype"),
    ],
)
def test_corrupt_file_is_one_line_naming_the_file(tmp_path, content, message):
    path = tmp_path / "kb.json"
    path.write_text(content)
    with pytest.raises(KBError, match=message) as err:
        KnowledgeBase.load(path)
    assert str(err.value).startswith(f"{path}: ") and "\n" not in str(err.value)


def test_a_key_twice_in_the_file_is_an_error(tmp_path):
    path = tmp_path / "kb.json"
    e = entry()
    path.write_text(json.dumps({"format": "aoe-kb", "version": 1, "entries": [e, e]}))
    with pytest.raises(KBError, match=r"entries\[1\]: .*1x4608x3584 row_major appears twice"):
        KnowledgeBase.load(path)


def test_save_is_atomic(tmp_path, monkeypatch):
    path = tmp_path / "kb.json"
    kb = KnowledgeBase()
    kb.merge(entry(value=1.0))
    kb.save(path)
    before = path.read_bytes()
    kb.merge(entry(value=2.0))

    def crash(*args, **kwargs):
        raise OSError("disk full")

    for name in ("fsync", "replace"):  # dies after writing the temp file, or at the rename
        with monkeypatch.context() as m:
            m.setattr(os, name, crash)
            with pytest.raises(OSError, match="disk full"):
                kb.save(path)
        assert path.read_bytes() == before
        assert sorted(p.name for p in tmp_path.iterdir()) == ["kb.json"]
    inode = path.stat().st_ino
    kb.save(path)
    assert path.stat().st_ino != inode  # a new file renamed over the old one
    assert KnowledgeBase.load(path).entries()[0]["value"] == 2.0


# --- lookup -------------------------------------------------------------------------------------


def small_kb() -> KnowledgeBase:
    kb = KnowledgeBase()
    for e in (
        entry(M=1, K=3584, N=4608, value=10.0, tile_n=256),
        entry(M=1, K=3584, N=37888, value=11.0, tile_n=512),
        entry(M=16, K=3584, N=4608, value=12.0, tile_m=16),
        entry(M=32, K=1024, N=1024, value=5.0, layout="z_major", pipeline=1),
        entry(M=32, K=1024, N=1024, value=6.0, layout="col_major"),
        entry(M=32, K=1024, N=1024, value=1.0, layout="row_major"),
        # 45/27 == 75/45, yet in floats log2 puts 75 a hair nearer to 45 than 27
        entry(M=27, K=256, N=256, value=9.0),
        entry(M=75, K=256, N=256, value=1.0),
        entry(M=128, K=1024, N=1024, value=7.0),
        entry(M=1, K=3584, N=4608, value=99.0, dtype="bf16"),
        entry(M=1, K=3584, N=4608, value=98.0, soc="Ascend910B1"),
    ):
        kb.merge(e)
    return kb


def test_exact_lookup():
    found = lookup(small_kb(), SOC, "gemm", "fp16", 16, 3584, 4608)
    assert found is not None and found.exact and found.distance == 0.0
    assert found.config["tile_m"] == 16 and found.entry["value"] == 12.0
    assert found.describe() == "exact entry Ascend910B3/gemm/fp16 16x4608x3584 row_major"


def test_nearest_lookup_in_log2_shape():
    found = lookup(small_kb(), SOC, "gemm", "fp16", 4, 3584, 4608)
    # M=4 is 2 doublings from M=1 and 2 halvings from M=16: a tie, the higher value wins
    assert not found.exact and found.distance == pytest.approx(2.0)
    assert found.entry["M"] == 16
    found = lookup(small_kb(), SOC, "gemm", "fp16", 2, 3584, 30000)
    assert (found.entry["M"], found.entry["N"]) == (1, 37888)
    expected = math.sqrt(1.0 + (math.log2(30000) - math.log2(37888)) ** 2)
    assert found.distance == pytest.approx(expected)


def test_equal_distances_tie_whatever_the_last_bit_of_log2():
    d27 = (math.log2(45) - math.log2(27)) ** 2
    d75 = (math.log2(45) - math.log2(75)) ** 2
    assert d75 < d27  # floating point says 75; the grid says tie, and 27 has the higher value
    found = lookup(small_kb(), SOC, "gemm", "fp16", 45, 256, 256)
    assert found.entry["M"] == 27


def test_lookup_layout_filter_and_misses(tmp_path):
    kb = small_kb()
    anyone = lookup(kb, SOC, "gemm", "fp16", 32, 1024, 1024)
    assert anyone.exact and anyone.entry["layout"] == "col_major"  # higher value among equals
    z = lookup(kb, SOC, "gemm", "fp16", 32, 1024, 1024, layout="z_major")
    assert z.exact and z.config["pipeline"] == 1
    near_z = lookup(kb, SOC, "gemm", "fp16", 1, 3584, 4608, layout="z_major")
    assert not near_z.exact and near_z.entry["M"] == 32
    assert lookup(kb, SOC, "gemm", "fp32", 1, 1, 1) is None
    assert lookup(kb, "Ascend910B4", "gemm", "fp16", 1, 1, 1) is None
    path = tmp_path / "kb.json"
    kb.save(path)
    assert lookup(path, SOC, "gemm", "bf16", 1, 3584, 4608).entry["value"] == 99.0
    with pytest.raises(KBError, match="M: expected an integer"):
        lookup(kb, SOC, "gemm", "fp16", 0, 1, 1)
    with pytest.raises(KBError, match="layout: expected one of"):
        lookup(kb, SOC, "gemm", "fp16", 1, 1, 1, layout="diag")


# --- the C header -------------------------------------------------------------------------------

DRIVER = r"""
#include <stdio.h>
#include <stdlib.h>
#include "aoe_kb.h"

/* argv: soc op dtype then groups of m k n layout; prints one line per query. */
int main(int argc, char **argv) {
    int i;
    for (i = 4; i + 3 < argc; i += 4) {
        int exact = -1;
        double distance = -1.0;
        const aoe_kb_entry_t *e = aoe_kb_lookup(argv[1], argv[2], argv[3],
            (uint32_t)strtoul(argv[i], NULL, 10), (uint32_t)strtoul(argv[i + 1], NULL, 10),
            (uint32_t)strtoul(argv[i + 2], NULL, 10), atoi(argv[i + 3]), &exact, &distance);
        if (e == NULL) { printf("none\n"); continue; }
        printf("%u %u %u %d %d %.12f", e->m, e->k, e->n, e->layout, exact, distance);
        PRINT_FIELDS
        printf("\n");
    }
    return 0;
}
"""


def python_answer(kb: KnowledgeBase, dtype: str, m: int, k: int, n: int, layout: int) -> str:
    found = lookup(kb, SOC, "gemm", dtype, m, k, n,
                   layout=None if layout < 0 else LAYOUTS[layout])
    if found is None:
        return "none"
    e = found.entry
    cfg = {name: KNOWN_PARAMS[name].default for name in C_FIELDS} | e["config"]
    fields = [to_code(name, cfg[name]) for name in C_FIELDS]
    return " ".join(map(str, [e["M"], e["K"], e["N"], LAYOUTS.index(e["layout"]),
                              int(found.exact), f"{found.distance:.12f}", *fields]))


def compile_driver(tmp_path: Path, kb: KnowledgeBase) -> Path:
    write_c_header(kb, tmp_path / "aoe_kb.h")
    fields = " ".join(f'printf(" %d", e->{name});' for name in C_FIELDS)
    (tmp_path / "driver.c").write_text(DRIVER.replace("PRINT_FIELDS", fields))
    exe = tmp_path / "driver"
    subprocess.run([CC, "-std=c99", "-O2", "-Wall", "-Wextra", "-pedantic", "-Werror",
                    "driver.c", "-o", str(exe), "-lm"], cwd=tmp_path, check=True,
                   capture_output=True, timeout=60)
    return exe


def dense_kb() -> KnowledgeBase:
    """small_kb() and 40 random entries, with shapes that tie in log2 space."""
    kb = small_kb()
    rng = random.Random(7)
    for _ in range(40):
        kb.merge(entry(M=2 ** rng.randint(0, 12) * rng.choice((1, 3)),
                       K=rng.choice((1024, 3584, 18944, 4096)),
                       N=rng.choice((512, 4608, 37888, 152064)),
                       layout=rng.choice(("row_major", "z_major")),
                       value=float(rng.randint(1, 5)), tile_m=rng.choice((16, 32, 64, 128)),
                       l1_prefetch=rng.randint(0, 1), unroll_factor=rng.choice((0, 2, 4))))
    return kb


@pytest.mark.skipif(CC is None, reason="needs gcc")
@pytest.mark.parametrize("make_kb", [small_kb, dense_kb])
def test_c_header_lookup_agrees_with_python(tmp_path, make_kb):
    kb = make_kb()
    rng = random.Random(11)
    exe = compile_driver(tmp_path, kb)
    # ties: M=1 vs M=16 (higher value wins), three layouts of one shape, 27 vs 75 around 45
    queries = [(1, 3584, 4608, -1), (4, 3584, 4608, -1), (32, 1024, 1024, -1),
               (32, 1024, 1024, 2), (45, 256, 256, -1), (3, 7, 100000, 0),
               (24, 4096, 4608, -1), (1, 1, 1, 1)]
    queries += [(rng.randint(1, 8192), rng.randint(1, 40000), rng.randint(1, 160000),
                 rng.choice((-1, 0, 2))) for _ in range(150)]
    queries += [(e["M"], e["K"], e["N"], -1) for e in kb.entries()[:20]]
    got = {}
    for dtype in ("fp16", "bf16", "fp32"):
        args = [str(exe), SOC, "gemm", dtype]
        for q in queries:
            args += map(str, q)
        got[dtype] = subprocess.run(args, capture_output=True, text=True, check=True,
                                    timeout=60).stdout.splitlines()
        assert got[dtype] == [python_answer(kb, dtype, *q) for q in queries]
    exact_flags = [line.split()[4] for line in got["fp16"] if line != "none"]
    assert exact_flags.count("1") >= 8 and exact_flags.count("0") >= 100
    assert set(got["fp32"]) == {"none"}  # no fp32 table


@pytest.mark.skipif(CC is None or CXX is None, reason="needs gcc and g++")
def test_c_header_compiles_as_c_and_cpp_even_when_empty(tmp_path):
    for kb in (KnowledgeBase(), small_kb()):
        header = tmp_path / "aoe_kb.h"
        write_c_header(kb, header)
        assert header.read_text() == c_header(kb, guard="AOE_KB_H")
        (tmp_path / "use.c").write_text('#include "aoe_kb.h"\nint f(void) { return 0; }\n')
        subprocess.run([CC, "-std=c99", "-Wall", "-Wextra", "-pedantic", "-Werror", "-c",
                        "use.c", "-o", "use.o"], cwd=tmp_path, check=True, capture_output=True,
                       timeout=60)
        (tmp_path / "use.cpp").write_text(
            '#include "aoe_kb.h"\n#include "aoe_kb.h"\n'
            'int f() { return aoe_kb_lookup("a", "b", "c", 1, 1, 1, AOE_LAYOUT_ANY, nullptr, '
            'nullptr) == nullptr; }\n')
        subprocess.run([CXX, "-std=c++17", "-Wall", "-Wextra", "-Werror", "-c", "use.cpp",
                        "-o", "use_cpp.o"], cwd=tmp_path, check=True, capture_output=True,
                       timeout=60)


def test_c_header_holds_defaults_for_untuned_parameters():
    kb = KnowledgeBase()
    kb.merge(make_entry(SOC, "gemm", "fp16", 1, 64, 64, "row_major", {"tile_m": 16}, 1.0, None,
                        "s", None))
    text = c_header(kb)
    # m, k, n, layout, then tile_m=16 and the defaults of the other C fields
    defaults = [to_code(n, KNOWN_PARAMS[n].default) for n in C_FIELDS[1:]]
    row = ", ".join(map(str, [1, 64, 64, 0, 16, *defaults]))
    assert "    {" + row + ", 1.0, " in text


def test_c_header_carries_the_catlass_arguments():
    kb = KnowledgeBase()
    kb.merge(make_entry(SOC, "gemm", "fp16", 1, 4096, 4096, "row_major",
                        {"tile_m": 16, "split_k": 4, "layout_b": "zN", "swizzle_direction": 1},
                        1.0, None, "s", None))
    text = c_header(kb)
    assert "#define AOE_OPERAND_LAYOUT_ZN 2" in text
    assert "    int32_t split_k;" in text and "    int32_t layout_b;" in text
    row = next(line for line in text.splitlines() if line.startswith("    {1, 4096, 4096, 0, "))
    values = [v.strip() for v in row.strip(" {},").split(",")]
    fields = dict(zip(C_FIELDS, values[4:], strict=False))
    assert fields["split_k"] == "4" and fields["layout_b"] == "2"
    assert fields["swizzle_direction"] == "1" and fields["swizzle_offset"] == "3"


def test_an_operator_entry_keeps_its_latency_and_interval_and_rejects_bad_ones():
    e = make_entry(SOC, "gemm", "fp16", 16, 3584, 4608, "row_major", {"tile_m": 16}, 3.5, None,
                   "run/qkv_proj/16x4608x3584", None, objective="TFLOPS", latency_us=150.0,
                   latency_interval_us=(148.0, 152.5))
    assert (e["latency_us"], e["latency_interval_us"]) == (150.0, [148.0, 152.5])
    assert validate_entry(json.loads(json.dumps(e))) == e
    for bad in ([152.0, 148.0], [0, 1.0], [1.0], "1-2"):
        with pytest.raises(KBError, match="latency_interval_us: expected"):
            validate_entry({**e, "latency_interval_us": bad})
    with pytest.raises(KBError, match="latency_us: expected a positive number"):
        validate_entry({**e, "latency_us": -1.0})
