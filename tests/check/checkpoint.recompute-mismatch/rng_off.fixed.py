"""Blocks with dropout, checkpointed without preserving the RNG state: the recomputation draws other masks."""
import functools

import torch
import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.utils.checkpoint import checkpoint


class Block(nn.Module):
    def __init__(self, width):
        super().__init__()
        self.fc = nn.Linear(width, width)
        self.drop = nn.Dropout(0.1)

    def forward(self, x):
        return x + self.drop(self.fc(x))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block(16) for _ in range(4)])

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=True)  # violation
        return x

    def forward_kept(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=True)  # near miss: kept
        return x


model = Model()
wrapped = checkpoint_wrapper(model.blocks[0], preserve_rng_state=True)  # violation
apply_activation_checkpointing(
    model,
    checkpoint_wrapper_fn=functools.partial(checkpoint_wrapper, preserve_rng_state=True),  # violation
    check_fn=lambda m: isinstance(m, Block),
)
