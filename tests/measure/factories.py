"""Models for the measurement tests: each factory returns (model, example_batch), as a user's would.

Built to have one checkpointing situation each; the tests run them through `rootrank measure` (in a
subprocess, as a user would) and for real in this process (tests/measure/groundtruth.py).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from torch.utils.checkpoint import checkpoint


def mlp(width: int = 64) -> nn.Module:
    return nn.Sequential(nn.Linear(width, 4 * width), nn.GELU(), nn.Linear(4 * width, width))


def mlp_sequential() -> tuple[nn.Module, Any]:
    """A plain nn.Sequential of MLP blocks, nothing checkpointed."""
    torch.manual_seed(0)
    return nn.Sequential(*[mlp() for _ in range(6)]), torch.randn(256, 64)


def llama_config() -> Any:
    from transformers import LlamaConfig

    return LlamaConfig(vocab_size=256, hidden_size=64, intermediate_size=128, num_hidden_layers=4,
                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=256)


def _llama(attention: str = "sdpa") -> tuple[nn.Module, Any]:
    from transformers import LlamaForCausalLM

    torch.manual_seed(0)
    config = llama_config()
    config._attn_implementation = attention
    model = LlamaForCausalLM(config)
    model.train()
    ids = torch.randint(0, 256, (2, 64))
    return model, {"input_ids": ids, "labels": ids}


def tiny_llama() -> tuple[nn.Module, Any]:
    """A tiny Llama from a small LlamaConfig, nothing checkpointed."""
    return _llama()


def tiny_llama_eager() -> tuple[nn.Module, Any]:
    """The tiny Llama with eager attention: the same kernels on meta as on CPU (SDPA picks its math
    path on meta and its flash kernel on CPU, which save different tensors)."""
    return _llama("eager")


def llama_checkpointed() -> tuple[nn.Module, Any]:
    """Every layer checkpointed with transformers' own call: the well-configured case."""
    model, batch = _llama()
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    return model, batch


def llama_checkpointed_every_second() -> tuple[nn.Module, Any]:
    """Every second layer checkpointed with transformers' own call (`every_n_layers=2`)."""
    model, batch = _llama()
    model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False}, every_n_layers=2)
    return model, batch


def llama_gradient_checkpointed() -> tuple[nn.Module, Any]:
    """Every layer checkpointed with the call every transformers release has (deprecated alias on 5.23+)."""
    model, batch = _llama()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    return model, batch


def llama_checkpointed_eval() -> tuple[nn.Module, Any]:
    """transformers' flag set, but the model left in eval mode: checkpointing never engages."""
    model, batch = llama_checkpointed()
    model.eval()
    return model, batch


class Block(nn.Module):
    """A residual MLP block with a LayerNorm; how it checkpoints is chosen per instance."""

    def __init__(self, width: int = 64, mode: str = "none") -> None:
        super().__init__()
        self.norm = nn.LayerNorm(width)
        self.mlp = mlp(width)
        self.mode = mode

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        if self.mode == "norm":  # only the small layer: keeps its input, frees almost nothing
            h = checkpoint(self.norm, x, use_reentrant=False)
            return x + self.mlp(h)
        if self.mode == "block":
            return checkpoint(self._body, x, use_reentrant=False)
        if self.mode == "reentrant":
            return checkpoint(self._body, x, use_reentrant=True)
        if self.mode == "no-grad":
            with torch.no_grad():
                frozen = checkpoint(self.norm, x, use_reentrant=False)
            return x + self.mlp(frozen)
        return self._body(x)

    def _body(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.mlp(self.norm(x))


class Stack(nn.Module):
    def __init__(self, modes: list[str], frozen_input: bool = False) -> None:
        super().__init__()
        self.embed = nn.Linear(64, 64)
        self.layers = nn.ModuleList(Block(mode=m) for m in modes)
        self.head = nn.Linear(64, 8)
        if frozen_input:
            self.embed.requires_grad_(False)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = self.embed(x)
        for layer in self.layers:
            h = layer(h)
        return self.head(h).square().mean()


def _stack(modes: list[str], frozen_input: bool = False) -> tuple[nn.Module, Any]:
    torch.manual_seed(0)
    return Stack(modes, frozen_input), torch.randn(512, 64)


def checkpointed_small_layer() -> tuple[nn.Module, Any]:
    """Each block checkpoints only its LayerNorm (checkpoint.overhead)."""
    return _stack(["norm"] * 4)


def partly_checkpointed() -> tuple[nn.Module, Any]:
    """Two of six blocks checkpointed (checkpoint.partial-coverage)."""
    return _stack(["block", "block", "none", "none", "none", "none"])


def all_checkpointed() -> tuple[nn.Module, Any]:
    """Every block checkpointed, non-reentrant: nothing to report."""
    return _stack(["block"] * 4)


def checkpoint_under_no_grad() -> tuple[nn.Module, Any]:
    """A checkpoint call inside torch.no_grad() (checkpoint.no-grad-context)."""
    return _stack(["no-grad"] * 3)


def reentrant_frozen_input() -> tuple[nn.Module, Any]:
    """Reentrant checkpoints fed by a frozen layer: no input requires grad
    (checkpoint.reentrant-no-grad-inputs)."""
    return _stack(["reentrant"] * 3, frozen_input=True)


def broken() -> tuple[nn.Module, Any]:
    return _shapes()


def _shapes() -> tuple[nn.Module, Any]:
    raise ValueError("hidden_size 63 is not divisible by num_attention_heads 4")
