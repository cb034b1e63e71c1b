import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    apply_activation_checkpointing,
    checkpoint_wrapper,
)


class DecoderLayer(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)


class TransformerBlock(nn.Module):
    """Renamed from DecoderLayer; the check_fn below was not updated."""

    def __init__(self):
        super().__init__()
        self.fc = nn.Linear(8, 8)


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.layers = nn.ModuleList([TransformerBlock() for _ in range(4)])


model = Model()
apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
                               check_fn=lambda m: isinstance(m, DecoderLayer))
apply_activation_checkpointing(model, checkpoint_wrapper_fn=checkpoint_wrapper,
                               check_fn=lambda m: isinstance(m, TransformerBlock))
