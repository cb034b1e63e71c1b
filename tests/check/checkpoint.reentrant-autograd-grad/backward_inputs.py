import torch
from torch.utils.checkpoint import checkpoint


def step(layer, x, adapter):
    out = checkpoint(layer, x)
    out.sum().backward(inputs=[adapter])
