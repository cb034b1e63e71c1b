"""checkpoint.reentrant-autograd-grad: reentrant checkpointing with `torch.autograd.grad` or `backward(inputs=...)`.

## What it does
Flags reentrant checkpoints in a file that calls `torch.autograd.grad(...)`, or `.backward(inputs=...)`
/ `torch.autograd.backward(..., inputs=...)`.

## Why is this bad?
Reentrant checkpointing only supports a plain `.backward()`: the recomputation runs its own backward
and cannot deliver gradients to chosen inputs. PyTorch raises "Checkpointing is not compatible with
.grad() or when an `inputs` parameter is passed to .backward()".

## Fix safety
`use_reentrant=False` is unsafe (recomputation semantics change); the non-reentrant variant supports
`torch.autograd.grad`.
"""

from __future__ import annotations

from collections.abc import Iterator

from rootrank.check.registry import Violation, rule
from rootrank.check.rules._common import at_line, report_sites
from rootrank.check.semantic import Semantic, keyword
from rootrank.model import Severity

RULE = "checkpoint.reentrant-autograd-grad"


@rule(RULE, Severity.ERROR, caused_by="reentrant")
def reentrant_autograd_grad(semantic: Semantic) -> Iterator[Violation]:
    grads = list(semantic.calls_to("torch.autograd.grad"))
    if grads:
        where, what = grads[0].node, "`torch.autograd.grad()`"
    else:
        partial = [s for s in semantic.calls
                   if keyword(s.node, "inputs") is not None and (
                       semantic.qualified(s.node.func) == "torch.autograd.backward"
                       or (getattr(s.node.func, "attr", None) == "backward"
                           and semantic.qualified(s.node.func) is None))]
        if not partial:
            return
        where, what = partial[0].node, "`backward(inputs=...)`"
    yield from report_sites(semantic, semantic.reentrant_sites(), (
        f"reentrant `{{api}}()` in code that calls {what} ({at_line(where)}): reentrant checkpointing only "
        "supports a plain `.backward()` and raises 'Checkpointing is not compatible with .grad() or when an "
        "`inputs` parameter is passed to .backward()'; use `use_reentrant=False`"))
