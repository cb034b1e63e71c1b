# versions: torch==2.13.0
"""`respect_saved_tensors_hooks` on a torch that does not have it: the function's keyword (Unexpected keyword)."""
import torch
from torch.utils.checkpoint import checkpoint


def reentrant(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=True, respect_saved_tensors_hooks=True)


def non_reentrant(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False, respect_saved_tensors_hooks=True)
