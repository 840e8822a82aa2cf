"""The written-out Adam takes the same steps as torch.optim.Adam."""

from __future__ import annotations

import torch

from aoe_optuna.samplers.reinforce._adam import Adam


def test_same_trajectory_as_torch_adam() -> None:
    torch.manual_seed(0)
    ours = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    theirs = torch.nn.Sequential(torch.nn.Linear(5, 7), torch.nn.Tanh(), torch.nn.Linear(7, 3))
    theirs.load_state_dict(ours.state_dict())
    start = ours[0].weight.detach().clone()
    opt_a = Adam(ours.parameters(), lr=0.03)
    opt_b = torch.optim.Adam(theirs.parameters(), lr=0.03)
    x = torch.randn(16, 5)
    for _ in range(25):
        for net, opt in ((ours, opt_a), (theirs, opt_b)):
            opt.zero_grad()
            (net(x) ** 2).sum().backward()
            opt.step()
    for a, b in zip(ours.parameters(), theirs.parameters(), strict=True):
        torch.testing.assert_close(a, b, rtol=1e-6, atol=1e-7)
    assert (ours[0].weight - start).abs().max() > 0.1  # 25 steps of lr 0.03 moved it
