"""Decode tokens/s of a model with attention charged at the roofline, CANN's default
tiling and the best tiling of the simulator's decode attention model.

The GEMMs, norms and activations are charged at their roofline in all three
columns, so the columns differ by attention alone.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_decode_attention.py \
        --soc Ascend910B2 --model qwen2.5-7b --points 1:4096 64:4096
"""

from __future__ import annotations

import argparse
from collections.abc import Callable, Sequence
from typing import Any

from aoe_optuna.aicore.attention.decode_attention import (
    attention_charge,
    best_tiling,
    default_cost,
)
from aoe_optuna.hardware.profile import SocProfile, load_profile
from aoe_optuna.space.decode_attention import cann_default_tiling
from aoe_optuna.workload.architecture import Architecture
from aoe_optuna.workload.forward import decode_attention_shape, forward_workload
from aoe_optuna.workload.models import MODELS, builtin_architecture


def print_points(profile: SocProfile, arch: Architecture, points: Sequence[str], tp: int, *,
                 shape_of: Callable[[int, int], Any], default_cost: Callable[..., Any],
                 best_tiling: Callable[..., Any], charge: Callable[..., Any],
                 default_tiling: Callable[..., Any]) -> None:
    """One row per batch:context point: attention per layer at the roofline, the default
    and the best tiling of the model, decode tokens/s with attention charged each way,
    and the two tilings. Shared by the GQA/MQA and the MLA decode scripts."""
    print("batch context | attn/layer us: roofline default best | tokens/s: roofline "
          "default best | default tiling -> best tiling")
    for point in points:
        batch, context = (int(x) for x in point.split(":"))
        shape = shape_of(batch, context)
        default = default_cost(profile, shape)
        best, best_cost = best_tiling(profile, shape)
        rates = []
        for model in (None, charge(profile, "default"), charge(profile, "best")):
            wl = forward_workload(profile, arch, "decode", batch, context, tp,
                                  attention_model=model)
            rates.append(wl.roofline_tokens_per_s(profile))
        print(f"{batch:5d} {context:7d} | {default.roofline_s * 1e6:8.1f} "
              f"{default.total_s * 1e6:7.1f} {best_cost.total_s * 1e6:6.1f} | "
              f"{rates[0]:8.1f} {rates[1]:7.1f} {rates[2]:7.1f} | "
              f"{default_tiling(profile, shape)} -> {best}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B2")
    parser.add_argument("--model", default="qwen2.5-7b", choices=sorted(MODELS))
    parser.add_argument("--points", nargs="+", default=["1:4096", "64:4096"],
                        help="batch:context pairs")
    args = parser.parse_args()
    profile = load_profile(args.soc)
    arch = builtin_architecture(args.model)
    print(f"{args.model} decode on {args.soc}, fp16, tp=1; GEMMs and vector ops at roofline")
    print_points(profile, arch, args.points, 1,
                 shape_of=lambda batch, context: decode_attention_shape(arch, batch, context, 1,
                                                                        "fp16"),
                 default_cost=default_cost, best_tiling=best_tiling, charge=attention_charge,
                 default_tiling=cann_default_tiling)


if __name__ == "__main__":
    main()
