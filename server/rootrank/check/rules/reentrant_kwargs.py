"""checkpoint.reentrant-kwargs: a reentrant checkpoint passing keyword arguments to the function.

## What it does
Flags reentrant `checkpoint(fn, x, mask=m)` calls: keywords other than checkpoint's own
(`use_reentrant`, `preserve_rng_state`, `context_fn`, `determinism_check`, `debug`, `early_stop`).

## Why is this bad?
The reentrant implementation only forwards positional arguments and raises
`ValueError: Unexpected keyword arguments: mask` at the first forward.

## Fix safety
`use_reentrant=False` is unsafe (recomputation semantics change); the non-reentrant variant forwards
keyword arguments.
"""

from __future__ import annotations

from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, Semantic
from rootrank.model import Severity

RULE = "checkpoint.reentrant-kwargs"


@rule(RULE, Severity.ERROR, caused_by="reentrant")
def reentrant_kwargs(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.reentrant_sites():
        if site.api != "checkpoint":
            continue
        passed = [k.arg for k in site.call.keywords if k.arg is not None and k.arg not in CHECKPOINT_OWN_KEYWORDS]
        if not passed:
            continue
        names = ", ".join(f"`{n}`" for n in passed)
        message = (f"reentrant `checkpoint()` passes keyword argument(s) {names} to the checkpointed function: "
                   f"it raises `ValueError: Unexpected keyword arguments: {', '.join(passed)}`; use "
                   "`use_reentrant=False`, which forwards keyword arguments")
        yield Violation(site.call.func, message,
                        edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api)))
