import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.utils.checkpoint import checkpoint


class MLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 32)
        self.act = nn.GELU()
        self.drop = nn.Dropout(0.1)
        self.proj = nn.Linear(32, 8)

    def forward(self, x):
        h = self.fc(x)
        h = checkpoint(self.act, h, use_reentrant=False)
        h = checkpoint(F.silu, h, use_reentrant=False)
        h = checkpoint(lambda t: t * torch.sigmoid(t) + 1, h, use_reentrant=False)
        h = checkpoint(nn.Dropout(0.1), h, use_reentrant=False)
        # near miss: a real layer
        return checkpoint(self.proj, h, use_reentrant=False)


model = MLP()
apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
                               check_fn=lambda m: isinstance(m, (nn.ReLU, nn.LayerNorm)))
