"""checkpoint.hf-use-cache: `use_cache=True` while training with gradient checkpointing.

## What it does
Flags `use_cache=True` (a keyword of `from_pretrained`, of a model call, or `model.config.use_cache =
True`) in a file that turns gradient checkpointing on (`gradient_checkpointing_enable()`,
`TrainingArguments(gradient_checkpointing=True)`). `generate(..., use_cache=True)` is left alone.

## Why is this bad?
The KV cache cannot be kept across a checkpointed recomputation: transformers switches it off again
and logs "`use_cache=True` is incompatible with gradient checkpointing. Setting `use_cache=False`"
on every step, and some models (and trl trainers) fail instead.

## Fix safety
Writing `False` is safe when the file does not call `.generate()`: transformers already runs
training with the cache off. With generation in the same file it is unsafe (generation gets slower).
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits, hf
from rootrank.check.names import dotted
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import Frame, Semantic, keyword
from rootrank.model import Applicability, Severity

RULE = "checkpoint.hf-use-cache"
_MESSAGE = ("`use_cache=True` while gradient checkpointing is on (line {line}): the KV cache cannot survive the "
            "recomputation, so transformers turns it off again with a warning on every step; set `use_cache=False` "
            "for training")


@rule(RULE, Severity.WARNING)
def hf_use_cache(semantic: Semantic) -> Iterator[Violation]:
    enabling = checkpointing_on(semantic)
    if enabling is None:
        return
    generates = any(semantic.method_calls("generate"))
    applicability = Applicability.UNSAFE if generates else Applicability.SAFE
    message = _MESSAGE.format(line=getattr(enabling, "lineno", "?"))
    for node, value in explicit_use_cache_true(semantic, enabling):
        label = "Set `use_cache=False`" if isinstance(node, ast.keyword) else "Set `use_cache = False`"
        yield Violation(node, message, edits.fixes(
            edits.fix(label, applicability, edits.replace(semantic, value, "False"))))


def is_true(expr: ast.expr) -> bool:
    return isinstance(expr, ast.Constant) and expr.value is True


def explicit_use_cache_true(semantic: Semantic, enabling: ast.AST) -> Iterator[tuple[ast.AST, ast.expr]]:
    """(where to report, the `True` to replace) for each `use_cache=True` keyword (not of a `generate` call) and
    each `….use_cache = True` of the code that trains with `enabling` (same_training_code)."""
    for site in semantic.calls:
        if isinstance(site.node.func, ast.Attribute) and site.node.func.attr == "generate":
            continue
        found = keyword(site.node, "use_cache")
        if found is not None and is_true(found.value) and same_training_code(semantic, enabling, site.frame, site.node):
            yield found, found.value
    for assign in semantic.assigns:
        if (is_true(assign.value) and any(isinstance(t, ast.Attribute) and t.attr == "use_cache" for t in assign.targets)
                and same_training_code(semantic, enabling, assign.frame, assign.value)):
            yield assign.targets[0], assign.value


def same_training_code(semantic: Semantic, enabling: ast.AST, frame: Frame, node: ast.AST) -> bool:
    """Whether a `use_cache=True` belongs to the code that trains with checkpointing: the same function
    (or both at module level), not under `no_grad`/`inference_mode`, and not switching the model to
    inference (`.eval()` later in the same function: re-enabling the cache for generation)."""
    enabling_frame = next((s.frame for s in semantic.calls if s.node is enabling), None)
    if enabling_frame is None or enabling_frame.function is not frame.function:
        return False
    if any("no_grad" in (dotted(w) or "") or "inference_mode" in (dotted(w) or "") for w in frame.withs):
        return False
    line = getattr(node, "lineno", 0)
    return not any(s.frame.function is frame.function and s.node.lineno >= line for s in semantic.method_calls("eval"))


def checkpointing_on(semantic: Semantic) -> ast.AST | None:
    for site in semantic.checkpoints:
        if hf.is_enable(site.api):
            return site.call
    for args in semantic.training_arguments():
        enabled = hf.flag(args.node)
        if enabled is not None and semantic.literal(enabled.value, args.frame) is True:
            return args.node
    return None
