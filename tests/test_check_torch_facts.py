"""What the code checks claim about torch, tested against the real torch installed in the test
environment (the CPU build): a fact a finding states is a fact the library shows. torch runs in a child
process, so the test runner itself stays small (other tests measure memory)."""

from __future__ import annotations

import json
import subprocess
import sys

from tests.heavy import require_module

PROBE = r"""
import json, torch
from torch.utils.checkpoint import checkpoint

def grads(mode, preserve=False):
    torch.manual_seed(0)
    block = torch.nn.Sequential(torch.nn.Linear(32, 32), torch.nn.Dropout(0.5), torch.nn.Linear(32, 32))
    x = torch.randn(4, 32, requires_grad=True)
    torch.manual_seed(1)
    y = block(x) if mode == "plain" else checkpoint(block, x, use_reentrant=mode == "reentrant",
                                                   preserve_rng_state=preserve)
    y.sum().backward()
    return block[0].weight.grad

reference = grads("plain")
print(json.dumps({mode: {"lost": torch.equal(grads(mode, False), reference),
                         "kept": torch.equal(grads(mode, True), reference)}
                  for mode in ("non-reentrant", "reentrant")}))
"""


def test_preserve_rng_state_false_gives_other_gradients_without_an_error() -> None:
    """checkpoint.recompute-mismatch's code check: no CheckpointError, yet the gradients differ."""
    require_module("torch")
    run = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, timeout=300, check=False)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    for mode, same in result.items():
        assert same == {"lost": False, "kept": True}, mode
