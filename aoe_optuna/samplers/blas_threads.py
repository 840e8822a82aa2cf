"""One BLAS thread inside a sampler's own scipy fits.

scipy's L-BFGS-B calls BLAS on vectors of a few hundred numbers; OpenBLAS's
thread pool gains nothing there, and on a busy 2-core machine its spinning
threads made the feasibility fit of a plain study 6x slower (197 ms against
31 ms per fit, measured here). One controller is built once: finding the
loaded libraries costs milliseconds, setting a limit with it microseconds.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from threadpoolctl import ThreadpoolController

_controller: ThreadpoolController | None = None


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Run the block with BLAS on one thread, then restore the caller's setting."""
    global _controller
    if _controller is None:
        _controller = ThreadpoolController()
    with _controller.limit(limits=1, user_api="blas"):
        yield
