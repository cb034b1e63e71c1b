"""DeepSpeed not installed where the check runs: at most a warning naming the releases without keyword tensors."""
import deepspeed


def forward(block, x, mask):
    return deepspeed.checkpointing.checkpoint(block, x, mask=mask)
