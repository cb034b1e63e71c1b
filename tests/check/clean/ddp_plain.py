"""DDP without checkpointing at all: skipped before parsing."""
import torch.nn as nn
from torch.nn.parallel import DistributedDataParallel as DDP

model = DDP(nn.Linear(4, 4), find_unused_parameters=True)
