"""An nn.Sequential stack checkpointed in segments, use_reentrant omitted."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint_sequential

WIDTH, DEPTH = 32, 6


def make_stack():
    return nn.Sequential(*[nn.Sequential(nn.Linear(WIDTH, WIDTH), nn.GELU()) for _ in range(DEPTH)])


def train(steps=3):
    stack = make_stack()
    optimizer = torch.optim.SGD(stack.parameters(), lr=0.1)
    for _ in range(steps):
        x = torch.randn(8, WIDTH, requires_grad=True)
        out = checkpoint_sequential(stack, 3, x, use_reentrant=True)
        out.sum().backward()
        optimizer.step()
        # near miss: spelled out
        out = checkpoint_sequential(stack, 3, x, use_reentrant=False)
