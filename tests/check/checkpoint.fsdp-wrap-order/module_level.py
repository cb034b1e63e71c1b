import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)
from torch.distributed.fsdp import FullyShardedDataParallel
from torch.distributed.fsdp.wrap import ModuleWrapPolicy
from torch.distributed.fsdp import fully_shard


class Block(nn.Module):
    pass


model = nn.Sequential(Block(), Block())
model = FullyShardedDataParallel(model, auto_wrap_policy=ModuleWrapPolicy({Block}))


def helper():
    return None


# flagged: the check selects the FSDP units themselves
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, FullyShardedDataParallel))
apply_activation_checkpointing(
    model,
    checkpoint_wrapper_fn=checkpoint_wrapper,
    check_fn=lambda module: isinstance(module, (Block, FullyShardedDataParallel)),
)

# near miss: the documented FSDP1 pattern, blocks inside the units get wrapped (FSDP(CheckpointWrapper(Block)))
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, Block))

# flagged: `model` is still the FSDP root from line 17 (the def above does not rebind it)
top = checkpoint_wrapper(model, checkpoint_impl=CheckpointImpl.NO_REENTRANT)

# near miss: FSDP2 reversed order measured at no extra cost
block = Block()
fully_shard(block)
block_ac = checkpoint_wrapper(block)
