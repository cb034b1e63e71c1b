# versions: deepspeed==0.19.3, torch==2.13.0, transformers==4.57.6
"""DeepSpeed's checkpoint with a keyword tensor on 0.19.3, whose `checkpoint(function, *args)` has no **kwargs
(deepspeed/runtime/activation_checkpointing/checkpointing.py:948, 0.19.3 sdist)."""
import deepspeed
from deepspeed.runtime.activation_checkpointing.checkpointing import checkpoint


def forward(block, x, mask):
    x = deepspeed.checkpointing.checkpoint(block, x, mask=mask)
    # Near miss: positional.
    return checkpoint(block, x, mask)
