"""Near misses: checkpointing where gradients flow."""
import torch
from torch.utils.checkpoint import checkpoint


def train_step(model, x):
    with torch.autocast("cuda"):
        y = checkpoint(model, x, use_reentrant=False)
    return y.sum()


def evaluate(model, x):
    with torch.no_grad():
        return model(x)


def nested():
    with torch.no_grad():
        def later(model, x):  # defined under no_grad, called elsewhere
            return checkpoint(model, x, use_reentrant=False)
    return later
