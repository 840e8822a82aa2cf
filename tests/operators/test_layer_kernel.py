"""Export of attention and vector kernel tilings through their kind's renderer: the file
written, its header comment, and a problem the kernel cannot run refused in one line with
nothing written."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from aoe_optuna.export.kernel_source import ExportError, ExportInfo
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.operators.layer_ops import LayerOperator
from aoe_optuna.operators.outcome import write_layer_kernel
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.vector_ops import VectorOp

PROFILE = load_profile("Ascend910B2")
INFO = ExportInfo(study="run/swiglu/1x18944", storage="sqlite:///x.db", trial=7,
                  value=2.5e5, baseline=2.0e5, objective="calls/s")


def _op(problem) -> LayerOperator:
    return LayerOperator(problem, "fp16", ("op",), 1)


def test_vector_kernel_written_with_its_provenance(tmp_path: Path) -> None:
    path = tmp_path / "swiglu.cpp"
    config = {"tile_len": 2048, "cores": 8, "double_buffer": 0}
    what = write_layer_kernel(path, _op(VectorOp("swiglu", 1, 18944)), config, PROFILE, INFO)
    assert what == "Ascend C swiglu kernel, tile_len 2048, 8 cores, single buffered"
    text = path.read_text()
    assert '// study "run/swiglu/1x18944", storage "sqlite:///x.db", trial 7' in text
    assert "// best: 250000 calls/s, baseline 200000 calls/s, gain +25.0%" in text
    assert "// config: tile_len=2048 cores=8 double_buffer=0" in text
    assert re.search(r"^constexpr uint32_t BUFFER_NUM = 1;$", text, flags=re.MULTILINE)
    with pytest.raises(ExportError, match=r"^swiglu 1x18944: cores_units: 24 cores for 10 ") as err:
        write_layer_kernel(tmp_path / "bad.cpp", _op(VectorOp("swiglu", 1, 18944)),
                           {**config, "cores": 24}, PROFILE, INFO)
    assert "\n" not in str(err.value) and not (tmp_path / "bad.cpp").exists()


def test_attention_catlass_cannot_run_is_one_line_and_nothing_written(tmp_path: Path) -> None:
    path = tmp_path / "fai.h"
    problem = DecodeAttention(batch=1, q_heads=8, kv_heads=8, head_dim=128, context=1024,
                              page_tokens=256)
    config = {"kv_split": 1, "block_tile": 512, "l1_tile": 256, "l0_tile": 128, "pipeline": 2}
    with pytest.raises(ExportError, match=r"^decode attention: page_tokens 256: ") as err:
        write_layer_kernel(path, _op(problem), config, PROFILE, INFO)
    assert "\n" not in str(err.value) and not path.exists()


@pytest.mark.parametrize(("problem", "message"), [
    (PrefillAttention(batch=1, q_heads=16, kv_heads=8, head_dim=128, seq_len=8192,
                      window=4096),
     "prefill attention: sliding window 4096: catlass's flash attention has no band mask"),
    (PrefillAttention(batch=1, q_heads=16, kv_heads=16, head_dim=192, seq_len=1024,
                      v_head_dim=128),
     "prefill attention: V width 128 beside head_dim 192: catlass's flash attention takes "
     "one head width"),
    (MlaDecodeAttention(batch=1, q_heads=128, context=4096, kv_lora_rank=512,
                        qk_rope_head_dim=64),
     "MLA decode attention: 128 heads: catlass's example runs its Tp1Spec kernels"),
    (MlaDecodeAttention(batch=1, q_heads=16, context=4096, kv_lora_rank=256,
                        qk_rope_head_dim=64),
     "MLA decode attention: latent 256 + rope 64: catlass's MLA kernel is fixed at 512 + 64"),
])
def test_attention_catlass_has_no_kernel_for_is_refused(tmp_path: Path, problem,
                                                        message: str) -> None:
    """A sliding-window band and a V narrower than Q/K (MLA prefill) have no catlass
    flash-attention-infer instantiation, nor 128 heads or another latent width catlass's
    MLA example: one line, nothing written, not a header that silently drops the
    difference."""
    path = tmp_path / "fai.h"
    config = {"q_tile": 128, "kv_tile": 512, "l1_tile": 128, "pipeline": 2,
              "dealing": "cyclic", "head_tile": 16, "kv_split": 1, "block_pages": 4,
              "resident": 1}
    with pytest.raises(ExportError, match="^" + re.escape(message)) as err:
        write_layer_kernel(path, _op(problem), config, PROFILE, INFO)
    assert "\n" not in str(err.value) and not path.exists()
