"""checkpoint.reentrant-compile: reentrant checkpointing in code that torch.compile reaches.

## What it does
Flags reentrant checkpoints (`use_reentrant=True`, or omitted) in two cases, and says which:
- the call sits inside a compiled region (a function decorated with or passed to `torch.compile`,
  or a method of a module class compiled with `torch.compile(model)` / `model.compile()`, including
  the classes that module builds);
- the checkpointed block is itself compiled (`torch.compile(block)`, `@torch.compile`, blocks
  compiled in a loop) while the checkpoint runs eagerly around it.

## Why is this bad?
On PyTorch 2.13, dynamo traces `checkpoint(..., use_reentrant=True)` inside a compiled region into
its non-reentrant higher-order op without a word: the code says reentrant, the run is not, and a
graph break inside the block falls back to eager reentrant checkpointing. An eager reentrant
checkpoint around a separately compiled block runs the recomputation with grad mode toggled, which
fails the compiled block's grad_mode guard and forces a recompile.

## Fix safety
`use_reentrant=False` is unsafe in general (recomputation semantics change); inside a compiled
region it matches what dynamo already runs.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.compiled import Compiled, compiled
from rootrank.check.names import dotted, last_name
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CheckpointSite, Semantic, loop_source_attr
from rootrank.model import Severity

RULE = "checkpoint.reentrant-compile"


@rule(RULE, Severity.WARNING, caused_by="reentrant")
def reentrant_compile(semantic: Semantic) -> Iterator[Violation]:
    if "compile" not in semantic.source:
        return
    reach = compiled(semantic)
    for site in semantic.reentrant_sites():
        if site.api == "gradient_checkpointing_enable":
            continue
        region = _region(site, reach)
        if site.api == "apply_activation_checkpointing":
            if not _compiled_block(site, reach):
                continue
            message = ("reentrant `apply_activation_checkpointing()` on a model that torch.compile compiles: dynamo "
                       "silently traces the reentrant wrappers as its non-reentrant higher-order op, and a graph "
                       "break falls back to eager reentrant checkpointing; use the default non-reentrant "
                       "`checkpoint_wrapper`")
        elif region:
            message = (f"reentrant `{site.api}()` inside code compiled with torch.compile ({region}): dynamo "
                       "silently traces it as its non-reentrant higher-order op, so `use_reentrant=True` is not "
                       "what runs, and a graph break in the block falls back to eager reentrant checkpointing; "
                       "use `use_reentrant=False`")
        elif _compiled_block(site, reach):
            message = (f"eager reentrant `{site.api}()` around a separately compiled block: the reentrant "
                       "recomputation runs under a different grad mode, which fails the compiled block's "
                       "grad_mode guard and forces a recompile; use `use_reentrant=False`")
        else:
            continue
        yield Violation(site.call.func, message,
                        edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api)))


def _region(site: CheckpointSite, reach: Compiled) -> str:
    """How the call's code is compiled, or "" when it is not."""
    for function in reversed(site.frame.functions):
        decorator = reach.decorated.get(id(function))
        if decorator is not None:
            return f"`{function.name}` is decorated with torch.compile at line {getattr(decorator, 'lineno', '?')}"
    outer = site.frame.functions[0] if site.frame.functions else None
    if site.frame.class_ is None and outer is not None and outer.name in reach.functions:
        return f"`{outer.name}` is compiled at line {getattr(reach.functions[outer.name], 'lineno', '?')}"
    owner = site.frame.class_
    if owner is not None and owner.name in reach.classes:
        return f"`{owner.name}` is compiled at line {getattr(reach.classes[owner.name], 'lineno', '?')}"
    return ""


def _compiled_block(site: CheckpointSite, reach: Compiled) -> bool:
    block = site.function
    if block is None:
        return False
    spelled = dotted(block)
    if spelled is not None and (spelled in reach.names or spelled in reach.functions):
        return True
    if isinstance(block, ast.Subscript):
        base = last_name(block.value)
        return base is not None and base in reach.element_attrs
    attr = loop_source_attr(block, site.frame)
    return attr is not None and attr in reach.element_attrs
