"""An msprof op_summary's attention and vector kernels as calibration rows."""

from __future__ import annotations

from pathlib import Path

import pytest

from aoe_optuna.calibration.msprof_layer_ops import read_msprof_layer_rows
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.files import WorkloadFileError
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.vector_ops import VectorOp

HEADER = "OP Type,Task Duration(us),Input Shapes,Input Data Types,Output Shapes"


def _summary(tmp_path: Path, *rows: str) -> Path:
    path = tmp_path / "op_summary_0_1.csv"
    path.write_text("\n".join([HEADER, *rows]) + "\n")
    return path


def test_each_kernel_type_becomes_its_problem_and_other_tasks_are_not_rows(
        tmp_path: Path) -> None:
    path = _summary(
        tmp_path,
        'RmsNorm,30.5,"4,1024,4096;4096",DT_BF16;DT_BF16,"4,1024,4096"',
        'AddRmsNorm,33,"4096,3584;4096,3584;3584",FLOAT16;FLOAT16;FLOAT16,"4096,3584"',
        'SwiGlu,40,"4096,37888",FLOAT16,"4096,18944"',
        'PromptFlashAttention,900,"1,28,4096,128;1,4,4096,128;1,4,4096,128",'
        'FLOAT16;FLOAT16;FLOAT16,"1,28,4096,128"',
        'FusedInferAttentionScore,60,"8,1,32,128;8,2048,8,128;8,2048,8,128",'
        'FLOAT16;FLOAT16;FLOAT16,"8,1,32,128"',
        'MoeGatingTopKSoftmax,12,"1024,128",FLOAT16,"1024,8"',
        'MatMulV2,20,"16,3584;3584,4608",FLOAT16;FLOAT16,"16,4608"',
        'Cast,2,"16,3584",FLOAT16,"16,3584"')
    rows = list(read_msprof_layer_rows(path))
    assert [r.problem for r in rows] == [
        VectorOp("rmsnorm", 4096, 4096, "bf16"), VectorOp("add_rmsnorm", 4096, 3584, "fp16"),
        VectorOp("swiglu", 4096, 18944, "fp16"),
        PrefillAttention(1, 28, 4, 128, 4096, True, 2, kv_len=4096),  # BNSD: heads differ
        DecodeAttention(8, 32, 8, 128, 2048),  # BSND, one query token
        MoeGating(1024, 128, 8, "fp16")]
    assert [r.time_us for r in rows] == [30.5, 33.0, 40.0, 900.0, 60.0, 12.0]
    assert [r.family for r in rows] == ["rmsnorm", "add_rmsnorm", "swiglu",
                                        "prefill_attention", "decode_attention", "moe_gating"]
    assert rows[3].where == f"{path}: line 5 PromptFlashAttention"


def test_a_query_whose_heads_the_profile_does_not_say_is_one_line(tmp_path: Path) -> None:
    path = _summary(tmp_path, 'PromptFlashAttention,900,"1,4096,3584;1,4096,512",'
                    'FLOAT16;FLOAT16,"1,4096,3584"')
    with pytest.raises(WorkloadFileError) as err:
        list(read_msprof_layer_rows(path))
    assert str(err.value).startswith(f"{path}: line 2, column 'Input Shapes': expected "
                                     "PromptFlashAttention's query and key as 4-D")
