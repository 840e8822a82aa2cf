"""One torch thread inside a sampler's own work.

Our models are small (a GP on a few hundred points, a policy of a few
thousand weights): they gain nothing from torch's intra-op thread pool, and on
a busy machine that pool's spinning threads made GP fits about 10x and policy
steps about 16x slower (measured on the project's shared 2-core machine).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch


@contextmanager
def one_torch_thread() -> Iterator[None]:
    """Run the block on one torch thread, then restore the caller's setting."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
