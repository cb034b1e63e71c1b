import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def __init__(self, depth=8):
        super().__init__()
        self.layers = nn.ModuleList([nn.Linear(4, 4) for _ in range(depth)])

    def forward(self, x):
        for layer in self.layers[:6]:
            x = checkpoint(layer, x, use_reentrant=False)
        for layer in self.layers[6:]:
            x = layer(x)
        # near miss: the whole list
        for layer in self.layers[:]:
            x = checkpoint(layer, x, use_reentrant=False)
        return x
