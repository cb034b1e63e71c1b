"""checkpoint.no-grad-context: checkpointing where no gradient is ever computed.

## What it does
Flags checkpoints inside `with torch.no_grad()` / `torch.inference_mode()` /
`torch.set_grad_enabled(False)`, in functions decorated with them, and in eval-only code (functions
named like `evaluate`/`validation_step`/`predict`, or under `if not self.training:`).

## Why is this bad?
Without autograd nothing is kept for backward, so checkpointing saves nothing and only adds the
wrapper's overhead; in reentrant mode PyTorch also warns "None of the inputs have requires_grad=True".

## Fix safety
Calling the function directly is unsafe in name only: without grad both run the same forward, but a
custom `context_fn` or `preserve_rng_state` may have been relied on.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.names import dotted
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CheckpointSite, Semantic
from rootrank.model import Applicability, Severity

RULE = "checkpoint.no-grad-context"
_EVAL_NAME = re.compile(r"^(eval|evaluate|evaluation|validate|validation|val|test|predict|inference|infer|generate)"
                        r"(_step|_epoch|_loop|_one_epoch)?$|_(eval|evaluate|validation|val|test|predict|inference)"
                        r"(_step|_epoch|_loop)?$")
_GRAD_ON = frozenset({"torch.enable_grad", "torch.autograd.enable_grad"})


@rule(RULE, Severity.WARNING)
def no_grad_context(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.checkpoints:
        if site.api not in ("checkpoint", "checkpoint_sequential"):
            continue
        reason = _grad_off(semantic, site)
        if not reason:
            continue
        message = (f"`{site.api}()` {reason}: no gradient is computed there, so checkpointing saves nothing and "
                   "only adds overhead (reentrant mode also warns 'None of the inputs have requires_grad=True')")
        fix = None
        if site.api == "checkpoint":
            fix = edits.fix("Call the function directly", Applicability.UNSAFE, edits.call_directly(semantic, site.call))
        yield Violation(site.call.func, message, edits.fixes(fix))


def _grad_off(semantic: Semantic, site: CheckpointSite) -> str:
    state = ""
    for item in site.frame.withs:
        if semantic.is_grad_off(item):
            state = f"under `{semantic.text(item)}` (line {item.lineno})"
        elif _grad_on(semantic, item):
            state = ""
    if state:
        return state
    for function in reversed(site.frame.functions):
        for decorator in function.decorator_list:
            if semantic.is_grad_off(decorator):
                return f"in `{function.name}`, decorated with `@{semantic.text(decorator)}`"
        if _EVAL_NAME.search(function.name):
            return f"only in eval code (`{function.name}`)"
    for node, in_else, _ in site.frame.branches:
        if _training_test(node.test) is not in_else and _training_test(node.test) is not None:
            return f"only in eval code (under `if {semantic.text(node.test)}:` at line {node.lineno})"
    return ""


def _grad_on(semantic: Semantic, item: ast.expr) -> bool:
    target = item.func if isinstance(item, ast.Call) else item
    if semantic.qualified(target) in _GRAD_ON:
        return True
    return (semantic.qualified(target) == "torch.set_grad_enabled" and isinstance(item, ast.Call)
            and bool(item.args) and semantic.literal(item.args[0]) is True)


def _training_test(test: ast.expr) -> bool | None:
    """True for `not x.training` (eval branch in the body), False for `x.training`, None otherwise."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        inner = _training_test(test.operand)
        return None if inner is None else not inner
    spelled = dotted(test)
    if spelled is not None and spelled.endswith(".training"):
        return False
    return None
