"""checkpoint.use-reentrant-explicit: checkpointing whose reentrant mode is left to the default.

## What it does
Flags `torch.utils.checkpoint.checkpoint()` and `checkpoint_sequential()` calls without
`use_reentrant`, `gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs`, and
`TrainingArguments(gradient_checkpointing=True)` without `gradient_checkpointing_kwargs`.

## Why is this bad?
The default is the legacy reentrant implementation; PyTorch warns on every call and has announced
that the argument will be required. The reentrant mode is also the one behind most checkpointing
failures (torch.compile, DDP, `autograd.grad`, frozen inputs, keyword arguments).

## Fix safety
Two fixes are offered. `use_reentrant=False` is the recommendation but is unsafe: recomputation
semantics change. It is safe when the checkpointed function is deterministic given the torch RNG,
does not mutate its inputs or global state, and nothing relies on reentrant-only behaviour (hooks
firing in the recomputation's own backward). `use_reentrant=True` is safe: it spells out what runs
today and only silences the warning. Fix-all (`--fix`) therefore applies `True`; `--unsafe-fixes`
applies the recommended `False`. A call that passes keyword arguments to its function already raises
in reentrant mode, so it only gets the `False` fix.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, Semantic, keyword
from rootrank.model import Applicability, Fix, Severity

RULE = "checkpoint.use-reentrant-explicit"
_RECOMMENDED = "Pass `{}` (recommended; unsafe: reentrant and non-reentrant recomputation differ)"
_KEEP = "Pass `{}` (keeps today's behaviour)"


@rule(RULE, Severity.WARNING)
def use_reentrant_explicit(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.checkpoints:
        if site.explicit or site.splat or site.api == "checkpoint_wrapper":
            continue
        call = site.call
        if site.api == "gradient_checkpointing_enable":
            message = ("`gradient_checkpointing_enable()` without `gradient_checkpointing_kwargs`: the mode is "
                       "transformers' default, reentrant (`use_reentrant=True`) up to 4.57 and non-reentrant from 5.0; "
                       'pass `gradient_checkpointing_kwargs={"use_reentrant": False}` to run the same mode on both')
            yield Violation(call.func, message, _kwargs_fixes(semantic, call, site.api))
            continue
        message = (f"`{site.api}()` without `use_reentrant`: the default is the legacy reentrant mode, PyTorch warns "
                   "on every call and will require the argument; pass `use_reentrant=False` (recommended) or "
                   "`use_reentrant=True` to keep today's behaviour")
        keep = edits.fix(_KEEP.format("use_reentrant=True"), Applicability.SAFE,
                         edits.add_keyword(semantic, call, "use_reentrant=True", site.api), keeps="reentrant")
        if any(k.arg not in CHECKPOINT_OWN_KEYWORDS for k in call.keywords):
            keep = None  # keyword arguments already make today's reentrant call raise: nothing worth keeping
        yield Violation(call.func, message, edits.fixes(
            edits.fix(_RECOMMENDED.format("use_reentrant=False"), Applicability.UNSAFE,
                      edits.add_keyword(semantic, call, "use_reentrant=False", site.api)),
            keep,
        ))
    for args in semantic.training_arguments():
        if semantic.trl_sets_non_reentrant(args):
            continue
        call = args.node
        enabled = keyword(call, "gradient_checkpointing")
        if enabled is None or semantic.literal(enabled.value, args.frame) is not True:
            continue
        if keyword(call, "gradient_checkpointing_kwargs") or any(k.arg is None for k in call.keywords):
            continue
        message = ("`gradient_checkpointing=True` without `gradient_checkpointing_kwargs`: the mode is transformers' "
                   "default, reentrant (`use_reentrant=True`) up to 4.57 and non-reentrant from 5.0; add "
                   '`gradient_checkpointing_kwargs={"use_reentrant": False}` to run the same mode on both')
        yield Violation(enabled, message, _kwargs_fixes(semantic, call, ""))


def _kwargs_fixes(semantic: Semantic, call: ast.Call, api: str) -> tuple[Fix, ...]:
    return edits.fixes(
        edits.fix(_RECOMMENDED.format('gradient_checkpointing_kwargs={"use_reentrant": False}'), Applicability.UNSAFE,
                  edits.add_keyword(semantic, call, 'gradient_checkpointing_kwargs={"use_reentrant": False}', api)),
        edits.fix(_KEEP.format('gradient_checkpointing_kwargs={"use_reentrant": True}'), Applicability.SAFE,
                  edits.add_keyword(semantic, call, 'gradient_checkpointing_kwargs={"use_reentrant": True}', api),
                  keeps="reentrant"),
    )
