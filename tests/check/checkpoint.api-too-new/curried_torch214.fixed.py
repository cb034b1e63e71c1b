# versions: torch==2.14.1
"""Near misses: the same code for torch 2.14.1, which has the curried form: no checkpoint.api-too-new finding."""
import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


class Net(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.ModuleList(nn.Linear(8, 8) for _ in range(4))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        for block in self.blocks:
            x = x + checkpoint(use_reentrant=False)(block)(x)
        return x


@checkpoint(use_reentrant=False)
def mlp(x: torch.Tensor) -> torch.Tensor:
    return torch.nn.functional.gelu(x)


def direct(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False)


def hooks(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(block, x, use_reentrant=False, respect_saved_tensors_hooks=False)


def no_mode(block: nn.Module, x: torch.Tensor) -> torch.Tensor:
    return checkpoint(use_reentrant=True)(block)(x)
