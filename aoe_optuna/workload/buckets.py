"""Serving ranges: one workload per (batch, seq_len) bucket, merged into the study's workload.

A server does not run one shape: it runs decode steps at the batch sizes its
scheduler forms and prefills of the lengths its users send. Each bucket is a
workload of its own; their merge is one cycle of serving every bucket
``weight`` times (once by default). Its GEMMs are the buckets' GEMMs, named
``<bucket>/<gemm>`` (``b16/qkv_proj``), with their counts times the weight, and

    tokens/s = sum(weight x tokens per step) / sum(weight x step time)

so a bucket weighs in by the time it takes, as it does on a real server; a
``weights`` list says how many steps of each bucket one cycle has (e.g. the
mix seen in a serving log).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import replace

from aoe_optuna.hardware.profile import SocProfile
from aoe_optuna.space.layer_problem import LayerProblem
from aoe_optuna.workload.architecture import Architecture
from aoe_optuna.workload.forward import AttentionShape, forward_workload
from aoe_optuna.workload.gemm import Gemm, Workload
from aoe_optuna.workload.step_operators import LayerOpCall


def bucket_label(batch: int, seq_len: int, batches: int, seq_lens: int) -> str:
    """``b16``, ``s1024`` or ``b16-s1024``: the parts that vary across the buckets."""
    parts = ([f"b{batch}"] if batches > 1 else []) + ([f"s{seq_len}"] if seq_lens > 1 else [])
    return "-".join(parts) or f"b{batch}"


def merge_buckets(buckets: Sequence[tuple[str, Workload]],
                  weights: Sequence[int] | None = None, name: str | None = None) -> Workload:
    """One workload serving each ``(label, workload)`` bucket ``weight`` times per cycle.

    ``details`` keep every bucket's own figures (``b16/attention_s``, ...) and
    its ``tokens_per_step``, ``step_fixed_s`` and ``weight``.
    """
    if not buckets:
        raise ValueError("buckets: expected at least one bucket, got none")
    if weights is None:
        weights = [1] * len(buckets)
    if len(weights) != len(buckets):
        raise ValueError(f"weights: expected {len(buckets)} weights (one per bucket), "
                         f"got {len(weights)}")
    for w in weights:
        if isinstance(w, bool) or not isinstance(w, int) or w < 1:
            raise ValueError(f"weights: expected whole numbers of steps, at least 1, got {w!r}")
    labels = [label for label, _ in buckets]
    if len(set(labels)) != len(labels):
        raise ValueError(f"buckets: expected distinct labels, got {labels}")
    gemms: list[Gemm] = []
    layer_ops: list[LayerOpCall] = []
    details: dict[str, float] = {}
    tokens = 0
    fixed = 0.0
    for (label, wl), w in zip(buckets, weights, strict=True):
        gemms += [replace(g, name=f"{label}/{g.name}", count=g.count * w) for g in wl.gemms]
        layer_ops += [op.renamed(f"{label}/{op.name}", op.count * w) for op in wl.layer_ops]
        tokens += w * wl.tokens_per_step
        fixed += w * wl.fixed_s
        details.update({f"{label}/{k}": v for k, v in wl.details.items()})
        details.update({f"{label}/tokens_per_step": float(wl.tokens_per_step),
                        f"{label}/step_fixed_s": wl.fixed_s, f"{label}/weight": float(w)})
    return Workload(name=name or " + ".join(f"{w}x {wl.name}" for (_, wl), w in
                                            zip(buckets, weights, strict=True)),
                    gemms=tuple(gemms), tokens_per_step=tokens, fixed_s=fixed, details=details,
                    layer_ops=tuple(layer_ops))


def serving_workload(profile: SocProfile, arch: Architecture, phase: str,
                     batches: Sequence[int], seq_lens: Sequence[int], tp: int = 1,
                     dtype: str = "fp16", weights: Sequence[int] | None = None,
                     vector_model: Callable[[LayerProblem], float] | None = None,
                     attention_model: Callable[[AttentionShape], float]
                     | None = None,
                     tuned: Collection[str] = (),
                     ) -> Workload:
    """The model's workload over every (batch, seq_len) bucket, batch-major.

    One bucket is that bucket's workload as it is, names unprefixed (a weight
    scales its tokens and its time alike). ``vector_model`` and
                     attention_model: Callable[[AttentionShape], float]
                     | None = None,
                     tuned: Collection[str] = (),
    """
    pairs = [(b, s) for b in batches for s in seq_lens]
    if len(pairs) == 1 and (weights is None or len(weights) == 1):
        return forward_workload(profile, arch, phase, pairs[0][0], pairs[0][1], tp, dtype,
                                attention_model=attention_model, vector_model=vector_model,
                                tuned=tuned)
    buckets = [(bucket_label(b, s, len(batches), len(seq_lens)),
                forward_workload(profile, arch, phase, b, s, tp, dtype,
                                 attention_model=attention_model, vector_model=vector_model,
                                tuned=tuned))
               for b, s in pairs]
    name = (f"{arch.name} {phase} batch={_spell(batches)} seq_len={_spell(seq_lens)} "
            f"tp={tp} {dtype}")
    return merge_buckets(buckets, weights, name)


def _spell(values: Sequence[int]) -> str:
    return str(values[0]) if len(values) == 1 else "[" + ",".join(map(str, values)) + "]"
