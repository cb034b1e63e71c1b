"""What the code checks claim about torch, tested against the real torch installed in the test
environment (the CPU build): a fact a finding states is a fact the library shows."""

from __future__ import annotations

from tests.heavy import require_module


def _dropout_block_grads(mode: str, preserve: bool = False) -> object:
    torch = require_module("torch")
    from torch.utils.checkpoint import checkpoint

    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Dropout(0.5), torch.nn.Linear(32, 32))
    x = torch.randn(4, 32, requires_grad=True)
    torch.manual_seed(1)
    if mode == "plain":
        y = block(x)
    else:
        y = checkpoint(block, x, use_reentrant=mode == "reentrant", preserve_rng_state=preserve)
    y.sum().backward()
    return block[0].weight.grad


def test_preserve_rng_state_false_gives_other_gradients_without_an_error() -> None:
    """checkpoint.recompute-mismatch's code check: no CheckpointError, yet the gradients differ."""
    torch = require_module("torch")
    reference = _dropout_block_grads("plain")
    for mode in ("non-reentrant", "reentrant"):
        assert not torch.equal(_dropout_block_grads(mode, preserve=False), reference), mode
        assert torch.equal(_dropout_block_grads(mode, preserve=True), reference), mode
