"""Each block compiled separately, the checkpoint around it runs eagerly."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self, depth=4):
        super().__init__()
        self.layers = nn.ModuleList([torch.compile(nn.Linear(16, 16)) for _ in range(depth)])
        self.head = torch.compile(nn.Linear(16, 2))
        self.tail = nn.Linear(2, 2)

    def forward(self, x):
        for layer in self.layers:
            x = checkpoint(layer, x, use_reentrant=True)
        x = checkpoint(self.head, x, use_reentrant=True)
        # near misses: not compiled, or non-reentrant
        x = checkpoint(self.tail, x, use_reentrant=True)
        return checkpoint(self.head, x, use_reentrant=False)


@torch.compile
def mlp(x):
    return torch.nn.functional.gelu(x @ x.T)


def step(x):
    return checkpoint(mlp, x, use_reentrant=True)
