# versions: torch==2.14.1
"""`respect_saved_tensors_hooks` on torch 2.14.1: checkpoint's own keyword, which the reentrant variant refuses."""
import torch
from torch.utils.checkpoint import checkpoint


def reentrant(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=True, respect_saved_tensors_hooks=True)


def non_reentrant(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False, respect_saved_tensors_hooks=True)
