"""Every spelling of checkpoint(); `--fix` must fix all of them, and a second run must change nothing."""
import functools
from functools import partial

import torch
import torch.utils.checkpoint as cp
from torch import nn
from torch.utils import checkpoint as tuc
from torch.utils.checkpoint import checkpoint as ckpt

ckpt_default = partial(ckpt, preserve_rng_state=False)
ckpt_spelled = functools.partial(torch.utils.checkpoint.checkpoint, use_reentrant=False)


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.a = nn.Linear(4, 4)
        self.b = nn.Linear(4, 4)

    def forward(self, x, **extra):
        x = ckpt(self.a, x, use_reentrant=True)
        x = cp.checkpoint(self.b, x, use_reentrant=True)
        x = torch.utils.checkpoint.checkpoint(self.a, x, use_reentrant=True,)
        x = tuc.checkpoint(
            self.b,
            x, use_reentrant=True,  # the activations
        )
        x = ckpt_default(self.a, x, use_reentrant=True)
        x = ckpt(self.b, x, preserve_rng_state=False, use_reentrant=True)  # keeps its comment
        # near misses: explicit, or a splat that may carry use_reentrant
        x = ckpt_spelled(self.a, x)
        x = ckpt(self.b, x, use_reentrant=False)
        x = ckpt(self.a, x, **extra)
        return x


def empty():
    return ckpt()


def checkpoint(function, *args):
    """A local helper with the same name: not torch's."""
    return function(*args)


def local(x):
    return checkpoint(torch.relu, x)
