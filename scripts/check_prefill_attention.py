"""The prefill attention model against the published 910B2 fused-attention timings,
and its default/best tilings for a model's prefill.

The published figures are the longer of kernel and host dispatch
(calibration/published_layer_ops.py), so the table gives the
model's kernel time (CANN's FIA, cann/fia_prefill.py, for the fused kernel; the
prompt kernel's model, cyclic, for PTO's), the published figure, their
ratio, and the published figure's rise over the first shape on the same
host (the part the host floor does not hide) against the model's rise.

    PYTHONPATH=$PWD .venv/bin/python scripts/check_prefill_attention.py \
        --soc Ascend910B2 --seq-lens 1024 4096 32768
"""

from __future__ import annotations

import argparse
import dataclasses

from aoe_optuna.aicore.attention.prefill_attention import (
    best_tiling,
    default_cost,
    prefill_attention_cost,
)
from aoe_optuna.aicore.cann.fia_prefill import fia_prefill_cost
from aoe_optuna.calibration.published_layer_ops import LayerOpFigure, of_kernel
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.space.prefill_attention import PrefillAttention, cann_default_tiling
from aoe_optuna.workload.forward import prefill_attention_shape
from aoe_optuna.workload.models import MODELS, builtin_architecture


def _tiling(t: object) -> str:
    return ", ".join(str(v) for v in vars(t).values())


def _compare(profile: SocProfile, records: tuple[LayerOpFigure, ...], dealing: str | None,
             ) -> None:
    """``dealing``: the prompt kernel's model with that dealing; None: CANN's FIA."""
    print("| host | S_q | S_kv | published us | model us | model/published "
          "| published rise us | model rise us |")
    print("|---|---|---|---|---|---|---|---|")
    base: dict[str, tuple[float, float]] = {}
    for p in records:
        s = p.shape
        shape = PrefillAttention(batch=s["batch"], q_heads=s["heads"], kv_heads=s["heads"],
                                 head_dim=s["head_dim"], seq_len=s["seq_q"],
                                 causal=s["causal"], kv_len=s["seq_kv"])
        if dealing is None:
            model_us = fia_prefill_cost(profile, shape).total_s * 1e6
        else:
            tiling = dataclasses.replace(cann_default_tiling(profile, shape), dealing=dealing)
            model_us = prefill_attention_cost(profile, shape, tiling).total_s * 1e6
        first = base.setdefault(p.host, (p.time_us, model_us))
        print(f"| {p.host} | {s['seq_q']} | {s['seq_kv']} | {p.time_us:.1f} | {model_us:.1f} "
              f"| {model_us / p.time_us:.2f} | {p.time_us - first[0]:.1f} "
              f"| {model_us - first[1]:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B2")
    parser.add_argument("--model", default="qwen2.5-7b", choices=sorted(MODELS))
    parser.add_argument("--seq-lens", nargs="+", type=int, default=[1024, 4096, 32768])
    args = parser.parse_args()
    profile = load_profile(args.soc)

    # CANN's FIA deals row-by-key blocks to the AI cores (cann/fia_prefill.py); the PTO
    # kernel gives a Q block a whole AI core (cyclic)
    for title, records, dealing in (
            ("CANN fused attention (npu_fused_infer_attention_score)",
             of_kernel("cann_fia", ("aarch64", "x86_64")), None),
            ("PTO flash kernel (jit_flash), one AI core",
             of_kernel("pto_flash", ("jit-aarch64", "jit-x86_64"), seq_q=128), "cyclic")):
        print(f"\n{title}, 1 head of 128, batch 1, fp16, no mask")
        _compare(profile, records, dealing)

    arch = builtin_architecture(args.model)
    print(f"\n{args.model} prefill, batch 1, one layer, {args.soc}, fp16")
    print("| seq_len | roofline us | CANN FIA us (library charge) | FIA busiest/mean core "
          "| prompt kernel default us | best us | default -> best "
          "(q_tile, kv_tile, l1_tile, pipeline, dealing) |")
    print("|---|---|---|---|---|---|---|")
    for seq in args.seq_lens:
        shape = prefill_attention_shape(arch, 1, seq, 1, "fp16")
        fia = fia_prefill_cost(profile, shape)
        default = default_cost(profile, shape)
        tiling, best = best_tiling(profile, shape)
        print(f"| {seq} | {default.roofline_s * 1e6:.1f} | {fia.total_s * 1e6:.1f} "
              f"| {fia.busiest_core_s / fia.mean_core_s:.3f} | {default.total_s * 1e6:.1f} "
              f"| {best.total_s * 1e6:.1f} | {_tiling(cann_default_tiling(profile, shape))} "
              f"-> {_tiling(tiling)} |")


if __name__ == "__main__":
    main()
