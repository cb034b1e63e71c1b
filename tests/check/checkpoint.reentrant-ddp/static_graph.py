"""Near miss: DDP's static graph supports reentrant checkpointing with unused parameters."""
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint


class Model(nn.Module):
    def __init__(self):
        super().__init__()
        self.block = nn.Linear(8, 8)

    def forward(self, x):
        return checkpoint(self.block, x, use_reentrant=True)


model = DDP(Model(), find_unused_parameters=True, static_graph=True)
