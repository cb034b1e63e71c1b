"""FSDP2 per-block sharding with reentrant checkpointing inside forward: trains fine, nothing to report."""
import torch
import torch.distributed as dist
import torch.nn as nn
from torch.distributed.fsdp import fully_shard
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(64, 16)
        self.blocks = nn.ModuleList([nn.Linear(16, 16) for _ in range(4)])

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=True)
        return x


def main():
    dist.init_process_group("gloo")
    model = Model()
    for block in model.blocks:
        fully_shard(block)
    fully_shard(model)
    model(torch.randint(0, 64, (2, 8))).sum().backward()
