import torch.nn as nn
from torch.utils.checkpoint import checkpoint


class Encoder(nn.Module):
    def __init__(self, layers):
        super().__init__()
        self.layers = nn.ModuleList(layers)

    def forward(self, x, mask):
        for layer in self.layers:
            x = checkpoint(layer, x, attention_mask=mask, use_reentrant=True)
            # near misses: positional, non-reentrant, checkpoint's own keywords
            x = checkpoint(layer, x, mask, use_reentrant=True, preserve_rng_state=False)
            x = checkpoint(layer, x, attention_mask=mask, use_reentrant=False)
        return x
