"""How a decode kernel splits a sequence's paged KV cache among its units.

GQA/MQA decode attention (decode_attention.py) and MLA decode attention
(mla_attention.py) split a sequence's context the same way: into at most two
parts per cube core, each part whole pages, none without a page of its own.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from aoe_optuna.hardware.profile import SocProfile


class PagedContext(Protocol):
    """A decode problem over a paged KV cache: its context length and page size."""

    @property
    def context(self) -> int: ...

    @property
    def page_tokens(self) -> int: ...


def max_kv_split(profile: SocProfile, shape: PagedContext) -> int:
    """Two parts per cube core at most, and no part without a page of its own."""
    return min(2 * profile.cube_cores, math.ceil(shape.context / shape.page_tokens))


def tokens_per_unit(shape: PagedContext, kv_split: int) -> int:
    """KV tokens one unit streams: the context split evenly, rounded up to whole pages."""
    share = math.ceil(shape.context / kv_split)
    return math.ceil(share / shape.page_tokens) * shape.page_tokens
