"""A block stack with reentrant checkpointing, the whole model compiled."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.checkpoint import checkpoint

VOCAB, DIM, LAYERS = 128, 32, 2


class Block(nn.Module):
    def __init__(self, dim):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)

    def forward(self, x):
        return x + self.fc2(F.gelu(self.fc1(self.norm(x))))


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.embed = nn.Embedding(VOCAB, DIM)
        self.blocks = nn.ModuleList([Block(DIM) for _ in range(LAYERS)])
        self.head = nn.Linear(DIM, VOCAB)

    def forward(self, idx):
        x = self.embed(idx)
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=True)
        return self.head(x)


def main():
    model = Model()
    model = torch.compile(model)
    idx = torch.randint(0, VOCAB, (4, 16))
    model(idx).sum().backward()
