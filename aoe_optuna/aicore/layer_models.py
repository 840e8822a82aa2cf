"""The simulator's model of every non-GEMM problem a workload may charge, one line per
problem type: the one list of these problem types, and the registry of the operator
kinds that tune them.

A spec charges a step's attention and vector kernels (``"attention"``,
``"vector_kernels"``: ``default``, ``best``, ``tuned``) through :func:`layer_charge`,
the knowledge base files entries of exactly these problems
(:mod:`aoe_optuna.export.kb` reads each one's ``KB_FIELDS``) and the calibration
keeps a band for each of their ops. Above, each type has exactly one operator kind
(:mod:`aoe_optuna.operators.kinds.registry` pairs them and refuses a type without a
kind or a kind without a line here). Adding a problem is its model module, one line
in :data:`LAYER_MODELS` and its kind (docs/ARCHITECTURE.md lists every file).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from aoe_optuna.aicore.attention import decode_attention, mla_attention, prefill_attention
from aoe_optuna.aicore.cann.fia_prefill import fia_prefill_seconds
from aoe_optuna.aicore.cann.library_vector import library_vector_seconds
from aoe_optuna.aicore.cann.mla_decode import cann_mla_decode_seconds
from aoe_optuna.aicore.vector.moe_gating import best_gating_config, default_gating_cost
from aoe_optuna.aicore.vector.vector_ops import best_vector_config
from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.decode_attention import DecodeAttention
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.space.mla_attention import MlaDecodeAttention
from aoe_optuna.space.prefill_attention import PrefillAttention
from aoe_optuna.workload.moe_gating import MoeGating
from aoe_optuna.workload.vector_ops import VectorOp

CHARGES = ("default", "best")

Seconds = Callable[[SocProfile, Any], float]


@dataclass(frozen=True)
class LayerModel:
    """Seconds of one call of a problem at its kernel's default tiling and at the best."""

    default_s: Seconds
    best_s: Seconds


def _attention(module: Any) -> LayerModel:
    """An attention model module's ``default_cost`` and ``best_tiling``."""
    return LayerModel(lambda pr, p: module.default_cost(pr, p).total_s,
                      lambda pr, p: module.best_tiling(pr, p)[1].total_s)


# Attention first, in the order the knowledge base has always listed its ops.
LAYER_MODELS: dict[type, LayerModel] = {
    DecodeAttention: _attention(decode_attention),
    # default: CANN's fused infer attention, its blocks dealt and keys split over the
    # cores (cann/fia_prefill.py); best: the prompt kernel's space
    PrefillAttention: LayerModel(fia_prefill_seconds, _attention(prefill_attention).best_s),
    # default: CANN's fused infer attention (what a deployment calls); best: the
    # catlass template's space
    MlaDecodeAttention: LayerModel(cann_mla_decode_seconds,
                                   _attention(mla_attention).best_s),
    # default: the library kernel (CANN's RmsNorm and SwiGlu where modelled)
    VectorOp: LayerModel(library_vector_seconds,
                         lambda pr, op: best_vector_config(pr, op)[1].total_s),
    MoeGating: LayerModel(lambda pr, p: default_gating_cost(pr, p).total_s,
                          lambda pr, p: best_gating_config(pr, p)[1].total_s),
}


def layer_charge(profile: SocProfile, charge: str) -> Callable[[LayerProblem], float]:
    """Seconds of one call of any problem of :data:`LAYER_MODELS` at its kernel's
    ``default`` tiling or its ``best`` one: the charge a workload takes (on a calibrated
    profile, the default charge by the constants of the problem's kernel family)."""
    if charge not in CHARGES:
        raise ValueError(f"charge: expected one of {list(CHARGES)}, got {charge!r}")

    # a chip's calibration fits the library kernels its timings are of (CANN's), so it
    # scales the default charge; the project's own kernels (best) keep the model
    chip = profile.calibration if charge == "default" else None

    def charged(problem: LayerProblem) -> float:
        model = LAYER_MODELS.get(type(problem))
        if model is None:
            raise ValueError(f"no simulator model charges a {type(problem).__name__}")
        seconds = (model.default_s if charge == "default" else model.best_s)(profile, problem)
        return seconds if chip is None else float(chip.layer_seconds(problem, seconds))
    return charged
