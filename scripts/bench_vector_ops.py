"""Tokens/s of a model with its vector kernels (add + RMSNorm, RMSNorm, SwiGLU, rope)
charged as forward.py does without a model (a byte count at HBM bandwidth), at the sum
of the kernels' own rooflines, at the step's ``default`` charge (CANN's RmsNorm and
SwiGlu as ops-nn tiles them, rope at the project's kernel's default tiling),
at the best tiling of the project's own kernel (exhaustive over each kernel's
feasible space), and shipped: per kernel the faster of the two, what ``aoe-tune
operators`` keeps (a tuned kernel only where it beats the library's default).

The GEMMs and attention are charged at their roofline in every column, so the
columns differ by the vector kernels alone.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_vector_ops.py \
        --soc Ascend910B2 --model qwen2.5-7b --points decode:1:1024 decode:64:4096 prefill:1:4096
"""

from __future__ import annotations

import argparse
from functools import cache

from aoe_optuna.aicore.cann.library_vector import library_vector_seconds
from aoe_optuna.aicore.vector.vector_ops import best_vector_config
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.workload.forward import forward_workload
from aoe_optuna.workload.models import MODELS, builtin_architecture
from aoe_optuna.workload.vector_ops import VectorOp, step_vector_ops


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B2")
    parser.add_argument("--model", default="qwen2.5-7b", choices=sorted(MODELS))
    parser.add_argument("--points", nargs="+",
                        default=["decode:1:1024", "decode:64:4096", "prefill:1:4096"],
                        help="phase:batch:seq_len triples")
    args = parser.parse_args()
    profile = load_profile(args.soc)
    arch = builtin_architecture(args.model)

    @cache
    def default_s(op: VectorOp) -> float:
        return library_vector_seconds(profile, op)

    @cache
    def best_s(op: VectorOp) -> float:
        return best_vector_config(profile, op)[1].total_s

    print(f"{args.model} on {args.soc}, fp16, tp=1; GEMMs and attention at roofline")
    print("| phase | batch | seq_len | vector ms/step: no model / kernel rooflines / "
          "default / best / shipped | tokens/s: no model / kernel rooflines / default / best "
          "/ shipped |")
    print("|---|---|---|---|---|")
    for point in args.points:
        phase, batch, seq_len = point.split(":")
        b, s = int(batch), int(seq_len)
        rows = [forward_workload(profile, arch, phase, b, s, vector_model=m)
                for m in (None, lambda op: op.roofline_s(profile), default_s, best_s,
                          lambda op: min(default_s(op), best_s(op)))]
        ms = [wl.details["elementwise_s"] * 1e3 for wl in rows]
        rate = [wl.roofline_tokens_per_s(profile) for wl in rows]
        print(f"| {phase} | {b} | {s} | " + " / ".join(f"{x:.3f}" for x in ms)
              + " | " + " / ".join(f"{x:.1f}" for x in rate) + " |")
        for op, n in step_vector_ops(arch, phase, b, s, 1, "fp16"):
            best, cost = best_vector_config(profile, op)
            print(f"|   | {op.label} x{n} | | roofline {op.roofline_s(profile) * 1e6:.2f} us, "
                  f"default {default_s(op) * 1e6:.2f} us, best {cost.total_s * 1e6:.2f} us "
                  f"| best {best} |")


if __name__ == "__main__":
    main()
