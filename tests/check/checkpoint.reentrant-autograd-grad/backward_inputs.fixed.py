import torch
from torch.utils.checkpoint import checkpoint


def step(layer, x, adapter):
    out = checkpoint(layer, x, use_reentrant=True)
    out.sum().backward(inputs=[adapter])
