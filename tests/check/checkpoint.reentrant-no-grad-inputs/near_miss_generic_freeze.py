"""near miss: a generic helper freezes a whole module (blocks included); it is not applied to the
embedding, and the checkpointed blocks' inputs depend on trainable parameters (class token, positions)."""
import torch
import torch.nn as nn
from torch.utils.checkpoint import checkpoint


def freeze(module):
    for p in module.parameters():
        p.requires_grad = False


class ViT(nn.Module):
    def __init__(self, depth=4, width=32):
        super().__init__()
        self.patch = nn.Linear(48, width)
        self.cls_token = nn.Parameter(torch.zeros(1, 1, width))
        self.pos_embed = nn.Parameter(torch.zeros(1, 17, width))
        self.blocks = nn.ModuleList([nn.TransformerEncoderLayer(width, 4) for _ in range(depth)])
        self.head = nn.Linear(width, 10)

    def forward(self, patches):
        x = self.patch(patches)
        x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1) + self.pos_embed
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=True)
        return self.head(x[:, 0])


model = ViT()
freeze(model.head)
