"""A compiled training step that checkpoints inside."""
import torch
from torch.utils.checkpoint import checkpoint


def block(x, w):
    return torch.tanh(x @ w)


@torch.compile(mode="max-autotune")
def forward(x, w, reentrant=True):
    return checkpoint(block, x, w, use_reentrant=reentrant)


def eager(x, w):
    # near miss: nothing compiles this
    return checkpoint(block, x, w, use_reentrant=True)
