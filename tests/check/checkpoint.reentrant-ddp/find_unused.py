"""DDP with find_unused_parameters=True over reentrant-checkpointed blocks."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint

FIND_UNUSED = True


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=True)
        return x


def main():
    dist.init_process_group("gloo")
    model = DDP(Model(), find_unused_parameters=FIND_UNUSED)
    model(torch.randn(2, 8)).sum().backward()
