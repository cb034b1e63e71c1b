# versions: deepspeed==0.19.8, torch==2.13.0, transformers==4.57.6
"""Near miss: the same call on DeepSpeed 0.19.8, whose checkpoint takes keyword tensors (checkpointing.py:1048-1066,
0.19.8 sdist: they are re-packed as keywords for the function)."""
import deepspeed


def forward(block, x, mask):
    return deepspeed.checkpointing.checkpoint(block, x, mask=mask)
