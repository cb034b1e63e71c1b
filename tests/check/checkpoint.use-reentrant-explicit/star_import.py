from torch.utils.checkpoint import *  # noqa: F403


def run(stack, block, x):
    x = checkpoint(block, x)
    return checkpoint_sequential(stack, 2, x, use_reentrant=False)
