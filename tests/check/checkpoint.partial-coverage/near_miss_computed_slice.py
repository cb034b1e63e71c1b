"""near miss: a slice of a computed list of modules (accelerate's FSDP2 activation checkpointing drops
the root model itself with `[:-1]`); a policy decides which are wrapped."""
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper


def children_bottom_up(model):
    return [*model.named_modules()][::-1]


def apply(model, policy):
    for name, layer in children_bottom_up(model)[:-1]:
        if policy(layer):
            parent, _, child = name.rpartition(".")
            model.get_submodule(parent).register_module(child, checkpoint_wrapper(layer))
    return model
