"""Adam, written out: the same update as ``torch.optim.Adam`` (defaults, CPU path).

Why not torch.optim: constructing any torch optimizer imports ``torch._dynamo``
(its methods are wrapped in ``torch._disable_dynamo``), which costs 5-14 s on
the shared 2-core machine: a new worker's first suggestion would pay it. The
update is a few lines; it follows torch's single-tensor Adam step for step,
so a study replayed with either gives the same policy up to float rounding.
"""

from __future__ import annotations

from collections.abc import Iterable

import torch


class Adam:
    """Adam (Kingma & Ba, 2015) without weight decay or amsgrad."""

    def __init__(
        self,
        params: Iterable[torch.nn.Parameter],
        lr: float = 1e-3,
        betas: tuple[float, float] = (0.9, 0.999),
        eps: float = 1e-8,
    ) -> None:
        self.params = [p for p in params if p.requires_grad]
        self.lr, self.betas, self.eps = lr, betas, eps
        self.step_count = 0
        self.m = [torch.zeros_like(p) for p in self.params]
        self.v = [torch.zeros_like(p) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    @torch.no_grad()
    def step(self) -> None:
        b1, b2 = self.betas
        self.step_count += 1
        bias1 = 1 - b1**self.step_count
        bias2_sqrt = (1 - b2**self.step_count) ** 0.5
        for p, m, v in zip(self.params, self.m, self.v, strict=True):
            if p.grad is None:
                continue
            g = p.grad
            m.lerp_(g, 1 - b1)
            v.mul_(b2).addcmul_(g, g, value=1 - b2)
            denom = (v.sqrt() / bias2_sqrt).add_(self.eps)
            p.addcdiv_(m, denom, value=-self.lr / bias1)
