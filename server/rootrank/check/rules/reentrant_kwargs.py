"""checkpoint.reentrant-kwargs: a reentrant checkpoint passing keyword arguments to the function.

## What it does
Flags reentrant `checkpoint(fn, x, mask=m)` calls: keywords other than checkpoint's own
(`use_reentrant`, `preserve_rng_state`, `context_fn`, `determinism_check`, `debug`, `early_stop`, and
`respect_saved_tensors_hooks` where the installed torch has it: the facts table's
`torch.respect-saved-tensors-hooks`).

## Why is this bad?
The reentrant implementation only forwards positional arguments and raises
`ValueError: Unexpected keyword arguments: mask` at the first forward. `respect_saved_tensors_hooks` is
the function's keyword on a torch without it (the same error); on one with it the reentrant checkpoint
rejects it with its own `ValueError` (only supported when `use_reentrant=False`).

## Fix safety
`use_reentrant=False` is unsafe (recomputation semantics change); the non-reentrant variant forwards
keyword arguments. Not offered for `respect_saved_tensors_hooks` on a torch without it: the
non-reentrant variant would pass it to the function, which fails as well.
"""

from __future__ import annotations

from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, Semantic
from rootrank.model import Severity
from rootrank.stack import facts

RULE = "checkpoint.reentrant-kwargs"
HOOKS = "respect_saved_tensors_hooks"
HOOKS_TOPIC = "torch.respect-saved-tensors-hooks"


@rule(RULE, Severity.ERROR, caused_by="reentrant")
def reentrant_kwargs(semantic: Semantic) -> Iterator[Violation]:
    hooks = semantic.fact(HOOKS_TOPIC)
    for site in semantic.reentrant_sites():
        if site.api != "checkpoint":
            continue
        given = [k.arg for k in site.call.keywords if k.arg is not None and k.arg not in CHECKPOINT_OWN_KEYWORDS]
        fixes = edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api))
        if HOOKS in given and hooks.known and hooks.value is not None:
            # torch's own keyword there, which the reentrant variant refuses with its own message.
            given.remove(HOOKS)
            yield Violation(site.call.func, f"reentrant `checkpoint()` with `{HOOKS}`: it raises "
                            f"`ValueError: {hooks.value}`; use `use_reentrant=False`", fixes, (hooks.assumed,))
        if not given:
            continue
        names = ", ".join(f"`{n}`" for n in given)
        message = (f"reentrant `checkpoint()` passes keyword argument(s) {names} to the checkpointed function: "
                   f"it raises `ValueError: Unexpected keyword arguments: {','.join(given)}`; use "
                   "`use_reentrant=False`, which forwards keyword arguments")
        if HOOKS not in given:
            yield Violation(site.call.func, message, fixes)
        elif hooks.known:
            # Non-reentrant would hand `respect_saved_tensors_hooks` to the function, which fails too.
            yield Violation(site.call.func, message, (), (hooks.assumed,))
        else:
            where = facts.topic(HOOKS_TOPIC).versions_where(None)
            yield Violation(site.call.func, f"{message} (`{HOOKS}` is the function's keyword on {where}; "
                            f"{hooks.assumed})", (), (hooks.assumed,), Severity.WARNING)
