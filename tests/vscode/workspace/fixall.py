import torch
from torch.utils.checkpoint import checkpoint


class Model(torch.nn.Module):
    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x)
        return self.head(x)
