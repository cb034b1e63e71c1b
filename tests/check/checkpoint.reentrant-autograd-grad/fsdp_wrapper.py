"""FSDP-style wrappers in reentrant mode, in a file that takes gradients with autograd.grad."""
import functools

import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
    CheckpointImpl,
    apply_activation_checkpointing,
    checkpoint_wrapper,
)

reentrant_wrapper = functools.partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.REENTRANT)


def setup(model, block_cls):
    apply_activation_checkpointing(model, checkpoint_wrapper_fn=reentrant_wrapper,
                                   check_fn=lambda m: isinstance(m, block_cls))
    head = checkpoint_wrapper(model.head, checkpoint_impl=CheckpointImpl.REENTRANT)
    # near misses: the default wrapper is non-reentrant
    apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, block_cls))
    tail = checkpoint_wrapper(model.tail, checkpoint_impl=CheckpointImpl.NO_REENTRANT)
    return head, tail


def penalty(y, x):
    return torch.autograd.grad(y.sum(), x, create_graph=True)
