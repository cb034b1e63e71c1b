"""Reentrant checkpointing forced on a DDP model, next to a comment about the failure it risks."""
import torch
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            # reentrant on purpose: our forward hooks expect it
            x = checkpoint(block, x, use_reentrant=True)  # violation (warning): fragile under DDP
        return x


model = DDP(Model(), device_ids=[0])
