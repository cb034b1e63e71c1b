import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(3)])

    def forward(self, x):
        for block in self.blocks:
            if not self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = checkpoint(block, x, use_reentrant=False)  # near miss: training branch
        return x


def evaluate(model, batches):
    return [checkpoint(model, b, use_reentrant=False) for b in batches]


@torch.no_grad()
def score(model, x):
    return checkpoint(model, x, use_reentrant=False)


def loop(model, x):
    with torch.inference_mode():
        y = checkpoint(model, x, use_reentrant=False)
    with torch.no_grad():
        with torch.enable_grad():
            y = checkpoint(model, x, use_reentrant=False)  # near miss: grad re-enabled
    return y
