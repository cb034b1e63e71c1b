import functools

import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl, checkpoint_wrapper
from torch.distributed.fsdp import FullyShardedDataParallel as FSDP
from torch.distributed.fsdp import fully_shard

reentrant_wrapper = functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.REENTRANT)


class Block(nn.Module):
    pass


def build(blocks: nn.ModuleList, impl, use_orig_params: bool):
    for i, block in enumerate(blocks):
        blocks[i] = checkpoint_wrapper(FSDP(block, use_orig_params=True))  # default impl: NO_REENTRANT
    for i, block in enumerate(blocks):
        blocks[i] = checkpoint_wrapper(
            FSDP(block, use_orig_params=use_orig_params),
            checkpoint_impl=CheckpointImpl.REENTRANT,
        )
    for i, block in enumerate(blocks):
        blocks[i] = reentrant_wrapper(FSDP(block))  # partial preset: REENTRANT
    for i, block in enumerate(blocks):
        blocks[i] = checkpoint_wrapper(FSDP(block), checkpoint_impl=impl)  # mode not knowable here
    for i, block in enumerate(blocks):
        blocks[i] = checkpoint_wrapper(module=FSDP(block))  # keyword form: flagged, no fix


def near_misses(blocks: nn.ModuleList, other):
    for i, block in enumerate(blocks):
        blocks[i] = FSDP(checkpoint_wrapper(block))  # near miss: the recommended order
    for block in blocks:
        fully_shard(checkpoint_wrapper(block))  # near miss: FSDP2, recommended order
    for i, block in enumerate(blocks):
        blocks[i] = checkpoint_wrapper(fully_shard(block))  # near miss: FSDP2 reversed costs nothing (torch 2.13)
    wrapped = checkpoint_wrapper(nn.Sequential(*blocks))  # near miss: not an FSDP unit
    also = checkpoint_wrapper(other(FSDP))  # near miss: FSDP is an argument, not the wrapped module
    return wrapped, also
