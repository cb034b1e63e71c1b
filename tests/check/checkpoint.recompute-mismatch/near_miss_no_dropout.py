"""near miss: preserve_rng_state=False where nothing random runs (no dropout anywhere, LoRA dropout 0)."""
import torch.nn as nn
from peft import LoraConfig
from torch.utils.checkpoint import checkpoint

config = LoraConfig(r=8, lora_dropout=0.0)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([nn.Linear(8, 8) for _ in range(2)])

    def forward(self, x):
        for block in self.blocks:
            x = checkpoint(block, x, use_reentrant=False, preserve_rng_state=False)
        return x
