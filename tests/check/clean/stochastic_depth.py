"""Non-reentrant checkpointing of every block, LayerDrop with Python's random: no checkpointing mistake
that a linter can prove (the recompute mismatch shows at run time)."""
import random

import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)

    def forward(self, x):
        if self.training and random.random() < 0.3:
            return x
        return x + self.fc(x)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block() for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False)
        return x
