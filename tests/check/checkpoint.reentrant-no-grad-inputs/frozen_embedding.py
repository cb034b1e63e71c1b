import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.wte = nn.Embedding(100, 8)
        self.wte.requires_grad_(False)
        self.block = nn.Linear(8, 8)

    def forward(self, idx):
        return checkpoint(self.block, self.wte(idx), use_reentrant=True)
