"""The built-in model table, and the workload of one of its models (or of any
:class:`~aoe_optuna.workload.architecture.Architecture`).

``Gemm``, ``Workload`` and ``single_gemm`` are gemm.py's: import them from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.workload.architecture import Architecture, from_table
from aoe_optuna.workload.forward import forward_workload

if TYPE_CHECKING:
    from aoe_optuna.workload.gemm import Workload

__all__ = ["MODELS", "QWEN25_7B", "builtin_architecture", "model_workload"]

# Qwen2.5-7B (config.json of Qwen/Qwen2.5-7B-Instruct, as quoted in the reference).
QWEN25_7B = {
    "hidden": 3584,
    "intermediate": 18944,
    "layers": 28,
    "q_heads": 28,
    "kv_heads": 4,
    "head_dim": 128,
    "vocab": 152064,
}

MODELS = {"qwen2.5-7b": QWEN25_7B}


def builtin_architecture(model: str) -> Architecture:
    """The :class:`Architecture` of a model of the built-in table."""
    if model not in MODELS:
        raise ValueError(f"model: expected one of {list(MODELS)}, got {model!r}; any other "
                         "model is given by its Hugging Face config.json as \"hf_config\": "
                         "\"path/to/config.json\" in place of \"model\" (docs/WORKLOADS.md)")
    return from_table(model, MODELS[model])


def model_workload(
    profile: SocProfile,
    model: str | Architecture = "qwen2.5-7b",
    phase: str = "decode",
    batch: int = 1,
    seq_len: int = 1024,
    tp: int = 1,
    dtype: str = "fp16",
) -> Workload:
    """Every GEMM of one forward step of ``model`` on one device of a ``tp`` group.

    ``model`` is a name of the built-in table or an :class:`Architecture` (e.g.
    from a Hugging Face config, hf_config.py); both take the same path
    (forward.py): column-parallel GEMMs (QKV, gate+up, lm_head) split N by
    ``tp``, row-parallel ones (O, down) split K and are followed by an
    all-reduce; attention, norms and activations are charged as HBM traffic.
    """
    arch = model if isinstance(model, Architecture) else builtin_architecture(model)
    return forward_workload(profile, arch, phase, batch, seq_len, tp, dtype)
