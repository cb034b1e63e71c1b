"""A model for the end-to-end test of "rootrank: Measure Checkpointing": two of four blocks checkpointed."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(32, 128), nn.GELU(), nn.Linear(128, 32))

    def forward(self, x):
        return x + self.body(x)


class Stack(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList(Block() for _ in range(4))

    def forward(self, x):
        for i, layer in enumerate(self.layers):
            x = checkpoint(layer, x, use_reentrant=False) if i < 2 else layer(x)
        return x.square().mean()


def build():
    torch.manual_seed(0)
    return Stack(), torch.randn(64, 32, requires_grad=True)
