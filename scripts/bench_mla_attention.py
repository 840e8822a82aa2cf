"""Decode tokens/s of an MLA model with attention charged at the roofline, catlass's
default tiling and the best tiling of the simulator's MLA decode attention model.

The GEMMs, norms and activations are charged at their roofline in all three
columns, so the columns differ by attention alone.

    PYTHONPATH=$PWD .venv/bin/python scripts/bench_mla_attention.py \
        --soc Ascend910B2 --config studies/models/deepseek-v2-lite.json \
        --points 1:4096 1:32768 64:4096
"""

from __future__ import annotations

import argparse
from pathlib import Path

from aoe_optuna.backends.simulator.mla_attention import (
    best_tiling,
    default_cost,
    mla_attention_charge,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.mla_attention import catlass_default_tiling
from aoe_optuna.workload.forward import forward_workload, mla_decode_attention_shape
from aoe_optuna.workload.hf_config import read_hf_config

MODELS = Path(__file__).resolve().parents[1] / "studies" / "models"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--soc", default="Ascend910B2")
    parser.add_argument("--config", type=Path, default=MODELS / "deepseek-v2-lite.json",
                        help="a Hugging Face config.json of an MLA model")
    parser.add_argument("--tp", type=int, default=1)
    parser.add_argument("--points", nargs="+", default=["1:4096", "64:4096"],
                        help="batch:context pairs")
    args = parser.parse_args()
    profile = load_profile(args.soc)
    arch = read_hf_config(args.config)[0]
    if arch.mla is None:
        parser.error(f"--config: {args.config} is not an MLA model")
    print(f"{arch.name} decode on {args.soc}, fp16, tp={args.tp}; GEMMs and vector ops at "
          "roofline")
    print("batch context | attn/layer us: roofline default best | tokens/s: roofline "
          "default best | default tiling -> best tiling")
    for point in args.points:
        batch, context = (int(x) for x in point.split(":"))
        shape = mla_decode_attention_shape(arch, arch.mla, batch, context, args.tp, "fp16")
        default = default_cost(profile, shape)
        best, best_cost = best_tiling(profile, shape)
        rates = []
        for charge in (None, mla_attention_charge(profile, "default"),
                       mla_attention_charge(profile, "best")):
            wl = forward_workload(profile, arch, "decode", batch, context, args.tp,
                                  attention_model=charge)
            rates.append(wl.roofline_tokens_per_s(profile))
        print(f"{batch:5d} {context:7d} | {default.roofline_s * 1e6:8.1f} "
              f"{default.total_s * 1e6:7.1f} {best_cost.total_s * 1e6:6.1f} | "
              f"{rates[0]:8.1f} {rates[1]:7.1f} {rates[2]:7.1f} | "
              f"{catlass_default_tiling(profile, shape)} -> {best}")


if __name__ == "__main__":
    main()
