"""A weight-shared block checkpointed several times per forward, under DDP."""
import torch.nn as nn
import torch.utils.checkpoint
from torch.nn.parallel import DistributedDataParallel


class Universal(nn.Module):
    def __init__(self, steps=6):
        super().__init__()
        self.block = nn.Linear(8, 8)
        self.steps = steps

    def forward(self, x):
        for _ in range(self.steps):
            x = torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=True)
        return x


class Twice(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(8, 8)
        self.other = nn.Linear(8, 8)

    def forward(self, x):
        x = torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=True)
        x = torch.utils.checkpoint.checkpoint(self.other, x, use_reentrant=True)
        return torch.utils.checkpoint.checkpoint(self.block, x, use_reentrant=True)


model = DistributedDataParallel(Universal())
