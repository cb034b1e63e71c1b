import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(6)])

    def forward(self, x):
        x = checkpoint(self.layers[0], x, use_reentrant=False)
        for layer in self.layers[1:]:
            x = layer(x)
        return x

    def forward_checkpointed(self, x):
        # near miss: the rest is checkpointed too
        x = checkpoint(self.layers[0], x, use_reentrant=False)
        for layer in self.layers[1:]:
            x = checkpoint(layer, x, use_reentrant=False)
        return x
