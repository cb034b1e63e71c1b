"""Blocks called without a loop, reentrant checkpoint each, the model compiled in place."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

REENTRANT = True


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(16, 16)

    def forward(self, x):
        h = self.fc(x)
        if not torch.isfinite(h).all():  # a data-dependent branch: a graph break
            print("non-finite activation")
        return x + h


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(), Block()])

    def forward(self, x):
        x = checkpoint(self.blocks[0], x, use_reentrant=REENTRANT)
        x = checkpoint(self.blocks[1], x)
        return x


model = Model()
model.compile()
