# versions: transformers==5.24.0
"""`respect_saved_tensors_hooks` with no torch version found: at most a warning naming the versions."""
import torch
from torch.utils.checkpoint import checkpoint


def reentrant(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=True, respect_saved_tensors_hooks=True)


def non_reentrant(block: torch.nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False, respect_saved_tensors_hooks=True)
