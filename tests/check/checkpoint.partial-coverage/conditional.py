"""Selective checkpointing by block index."""
import torch.nn as nn
from torch.utils.checkpoint import checkpoint

N_LAYER = 12
CKPT_EVERY = 3


class GPT(nn.Module):
    def __init__(self):
        super().__init__()
        self.h = nn.ModuleList([nn.Linear(8, 8) for _ in range(N_LAYER)])
        self.gradient_checkpointing = True

    def forward(self, x):
        for i, block in enumerate(self.h):
            if i % CKPT_EVERY == 0:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x

    def forward_first_half(self, x):
        for i in range(len(self.h)):
            if i >= N_LAYER // 2:
                x = self.h[i](x)
            else:
                x = checkpoint(self.h[i], x, use_reentrant=False)
        return x

    def forward_unknown(self, x, keep):
        for i, block in enumerate(self.h):
            if i not in keep:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x

    def forward_all(self, x):
        # near miss: the condition does not depend on the block
        for block in self.h:
            if self.gradient_checkpointing and self.training:
                x = checkpoint(block, x, use_reentrant=False)
            else:
                x = block(x)
        return x
