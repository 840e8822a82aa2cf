"""Where an operator's first configs come from: its neighbours' winners.

Good tilings of nearby problems are good guesses: a tile that suits a
4096-wide projection usually suits a 3584-wide one, and a decode attention
tiling that suits 8k of context with 28 query and 4 KV heads of 128 is a fair
start at 32k with the same heads once its KV split is scaled with the context
(the tokens each split reads carry over, not the split count: 1k's best
single split is 3.8x slower than the best at 32k, 32 splits are within 1% of
it, in the simulator's model). An operator's study is seeded with the
best configs of the operators of its *family* already tuned in the same run
and of the knowledge base's entries for the same SoC and dtype, nearest
first. A family is what a tiling carries over between: GEMMs of the spec's op;
decode attention of one KV layout; prefill attention with or without its causal
mask. Nearness is the distance in log2 of the problem's sizes: (M, K, N) for a
GEMM, (batch, heads, head_dim, context, page) for decode attention, as the
knowledge base measures it. MLA decode attention takes and gives no seeds (it is
no family). Vector kernels get no seeds: at batch 1 their spaces are a few dozen
tilings, measured out by the scheduler whatever the start. The seeds are
ordinary measurements, charged to the budget; the sampler then learns from them
like from any other trial.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from aoe_optuna.operators.kinds.registry import GEMM, kind_of_op
from aoe_optuna.operators.shapes import Operator
from aoe_optuna.space.search_space import SearchSpace

GEMM_FAMILY = GEMM.name
SPLIT = "kv_split"  # decode attention's split of the context over cores


@dataclass(frozen=True)
class Donor:
    """A config known to be good for some problem."""

    dims: tuple[int, ...]  # the sizes of the problem it won on ((M, K, N) for a GEMM)
    params: dict[str, Any]
    source: str  # "shape <dims>" or "kb <study>"
    dtype: str = "fp16"
    family: str = GEMM_FAMILY  # it seeds only operators of this family
    names: tuple[str, ...] = ()  # what each of ``dims`` is (an attention problem's fields)

    def distance(self, op: Operator) -> float:
        """Log2 distance to ``op``'s sizes; inf for an operator of another family."""
        point = warm_point(op)
        if point is None or point[0] != self.family or len(point[1]) != len(self.dims):
            return math.inf
        return math.sqrt(sum((math.log2(a) - math.log2(b)) ** 2
                             for a, b in zip(self.dims, point[1], strict=True)))


def adapted(donor: Donor, op: Operator, space: SearchSpace) -> dict[str, Any]:
    """The donor's config as a start for ``op``: a decode attention's KV split scaled by
    the ratio of the contexts (to the nearest choice of ``space``, in log2)."""
    params = dict(donor.params)
    split = next((p for p in space.params if p.name == SPLIT), None)
    doc = op.warm_doc()
    if (split is None or "context" not in donor.names or doc is None
            or not isinstance(params.get(SPLIT), int)):
        return params
    context = doc[1].get("context")
    if not isinstance(context, int):
        return params
    want = params[SPLIT] * context / donor.dims[donor.names.index("context")]
    params[SPLIT] = min(split.choices, key=lambda c: (abs(math.log2(c / want)), c))
    return params


def warm_point(op: Operator) -> tuple[str, tuple[int, ...]] | None:
    """``op``'s family and sizes; None for an operator that takes no seeds (its kind
    says whether its tilings carry over)."""
    doc = op.warm_doc()
    return None if doc is None else layer_point(*doc)


def layer_point(op_name: str, problem: Mapping[str, Any]) -> tuple[str, tuple[int, ...]]:
    """An attention problem's family (its op and the fields that are not sizes: the KV
    layout, the causal mask) and its sizes, from the knowledge base's problem fields."""
    labels = [f"{k}={v}" for k, v in problem.items() if not _is_size(v)]
    return "/".join([op_name, *labels]), tuple(v for v in problem.values() if _is_size(v))


def size_names(problem: Mapping[str, Any]) -> tuple[str, ...]:
    """The names of :func:`layer_point`'s sizes, in its order."""
    return tuple(k for k, v in problem.items() if _is_size(v))


def _seeded(op: str) -> bool:
    """Whether the kind whose entries are filed under ``op`` takes seeds."""
    kind = kind_of_op(op)
    return kind is not None and kind.seeded


def _is_size(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def kb_donors(entries: Iterable[Mapping[str, Any]], soc: str, op: str,
              dtype: str | None = None) -> list[Donor]:
    """The knowledge base's entries of the same SoC as donors: GEMM entries of ``op``,
    attention entries of any attention op (each seeds only its own family), of
    ``dtype`` if given; the tuner gives each operator only donors of its own dtype."""
    out = []
    for e in entries:
        if e["soc"] != soc or (dtype is not None and e["dtype"] != dtype):
            continue
        kind = e.get("kind", "gemm")
        if kind == "gemm" and e["op"] == op:
            out.append(Donor((e["M"], e["K"], e["N"]), dict(e["config"]), f"kb {e['study']}",
                             e["dtype"]))
        elif kind == "attention" and _seeded(e["op"]):
            family, sizes = layer_point(e["op"], e["problem"])
            out.append(Donor(sizes, dict(e["config"]), f"kb {e['study']}", e["dtype"], family,
                             size_names(e["problem"])))
    return out


def seeds_for(op: Operator, donors: Sequence[Donor], space: SearchSpace,
              tried: Iterable[Mapping[str, Any]], limit: int) -> list[Donor]:
    """Up to ``limit`` donors of ``op``'s family, nearest first, each a new, feasible config
    of ``space`` (its values among the space's choices; untuned keys dropped)."""
    seen = [dict(t) for t in tried]
    out: list[Donor] = []
    near = [(dist, d) for d in donors if math.isfinite(dist := d.distance(op))]
    for _, donor in sorted(near, key=lambda x: (x[0], x[1].source)):
        if len(out) >= limit:
            break
        params = _in_space(adapted(donor, op, space), space)
        if params is None or params in seen:
            continue
        seen.append(params)
        out.append(Donor(donor.dims, params, donor.source, donor.dtype, donor.family,
                         donor.names))
    return out


def _in_space(config: Mapping[str, Any], space: SearchSpace) -> dict[str, Any] | None:
    """``config`` restricted to the space's parameters; None if a value is not a choice
    or the config breaks a rule of the space."""
    params: dict[str, Any] = {}
    for p in space.params:
        if p.name not in config or config[p.name] not in p.choices:
            return None
        params[p.name] = config[p.name]
    if space.explain(params):
        return None
    return params
