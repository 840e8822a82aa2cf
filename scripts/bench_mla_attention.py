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
import sys
from pathlib import Path

from aoe_optuna.aicore.attention.mla_attention import (
    best_tiling,
    default_cost,
    mla_attention_charge,
)
from aoe_optuna.hardware.profile import load_profile
from aoe_optuna.space.mla_attention import catlass_default_tiling
from aoe_optuna.workload.forward import mla_decode_attention_shape
from aoe_optuna.workload.hf_config import read_hf_config

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_decode_attention import print_points  # noqa: E402  (a sibling script)

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
    mla = arch.mla
    print_points(profile, arch, args.points, args.tp,
                 shape_of=lambda batch, context: mla_decode_attention_shape(
                     arch, mla, batch, context, args.tp, "fp16"),
                 default_cost=default_cost, best_tiling=best_tiling,
                 charge=mla_attention_charge, default_tiling=catlass_default_tiling)


if __name__ == "__main__":
    main()
