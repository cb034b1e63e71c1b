import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper as cw
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import CheckpointImpl
import torch.distributed.fsdp as fsdp


def wrap_variable(block: nn.Module) -> nn.Module:
    sharded = fsdp.FullyShardedDataParallel(block)
    print("sharded", sharded)
    return cw(sharded, checkpoint_impl=CheckpointImpl.REENTRANT)  # flagged: `sharded` is the FSDP unit


def wrap_same_name(block: nn.Module) -> nn.Module:
    block = fsdp.FullyShardedDataParallel(block)
    block = cw(block)  # flagged: `block` was rebound to the FSDP unit
    return block


def wrap_inner(model: nn.Module, block: nn.Module) -> nn.Module:
    model.unit = fsdp.FullyShardedDataParallel(block, use_orig_params=True)
    return cw(block)  # flagged: the inner module, outside its FSDP unit


def near_miss_rebound(block: nn.Module, make) -> nn.Module:
    sharded = fsdp.FullyShardedDataParallel(block)
    sharded = make(block)  # rebinds `sharded`: no longer provably the FSDP unit
    return cw(sharded)


def near_miss_loop_rebound(blocks, block: nn.Module) -> None:
    unit = fsdp.FullyShardedDataParallel(block)
    for unit in blocks:  # rebinds `unit`
        cw(unit)


def near_miss_branch(block: nn.Module, shard: bool) -> nn.Module:
    if shard:
        block = fsdp.FullyShardedDataParallel(block)
    return cw(block)  # `block` is FSDP only on one path


def near_miss_other_scope(block: nn.Module) -> nn.Module:
    return cw(block)  # wrapped with FSDP in another function: not knowable here


def near_miss_order(block: nn.Module) -> nn.Module:
    block = cw(block)  # checkpoint first ...
    return fsdp.FullyShardedDataParallel(block)  # ... then FSDP: the recommended order


def near_miss_nonlocal(block: nn.Module) -> nn.Module:
    unit = fsdp.FullyShardedDataParallel(block)

    def swap() -> None:
        nonlocal unit
        unit = nn.Identity()

    swap()
    return cw(unit)  # `unit` may have been rebound by swap()
