"""checkpoint.reentrant-compile: reentrant checkpointing in code that torch.compile reaches.

## What it does
Flags reentrant checkpoints (`use_reentrant=True`, or omitted) in two cases, and says which:
- the call sits inside a compiled region (a function decorated with or passed to `torch.compile`,
  or a method of a module class compiled with `torch.compile(model)` / `model.compile()`, including
  the classes that module builds);
- the checkpointed block is itself compiled (`torch.compile(block)`, `@torch.compile`, blocks
  compiled in a loop) while the checkpoint runs eagerly around it.

- Hugging Face checkpointing (the enable call under either name, or the Trainer's arguments) that runs
  reentrant on a model compiled with `torch.compile(model)`, `model.compile()` or
  `TrainingArguments(torch_compile=True)`: transformers' checkpoint calls run inside the compiled forward.

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

from rootrank.check import edits, hf
from rootrank.check.compiled import Compiled, compiled
from rootrank.check.names import dotted, last_name
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import COMPILE, CheckpointSite, Frame, Semantic, keyword, loop_source_attr
from rootrank.model import Applicability, Severity

RULE = "checkpoint.reentrant-compile"


@rule(RULE, Severity.WARNING, caused_by="reentrant")
def reentrant_compile(semantic: Semantic) -> Iterator[Violation]:
    if "compile" not in semantic.source:
        return
    reach = compiled(semantic)
    yield from _trainer_compile(semantic)
    for site in semantic.reentrant_sites():
        if hf.is_enable(site.api):
            where = _hf_model_compiled(site, semantic, reach)
            if where:
                name = hf.kwargs_name(site.api)
                assumes, at_most, note = hf.qualify(site.assumed)
                yield Violation(site.call.func, (
                    f"reentrant `{site.api}()` on a model that is compiled ({where}): transformers' own "
                    "checkpoint calls run inside the compiled forward, where dynamo traces them as its "
                    "non-reentrant higher-order op, and a graph break in a layer falls back to eager reentrant "
                    f'checkpointing; pass `{name}={{"use_reentrant": False}}`') + note,
                    edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api)), assumes, at_most)
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


def _hf_model_compiled(site: CheckpointSite, semantic: Semantic, reach: Compiled) -> str:
    """How the model whose checkpointing this enable call turns on is compiled, or ""."""
    receiver = site.call.func.value if isinstance(site.call.func, ast.Attribute) else None
    spelled = dotted(receiver) if receiver is not None else None
    if spelled is None:
        return ""
    for call_site in [*semantic.calls_to(COMPILE), *semantic.method_calls("compile")]:
        call = call_site.node
        if not _same_binding(spelled, site.frame, call_site.frame):
            continue
        if semantic.qualified(call.func) == COMPILE and call.args and dotted(call.args[0]) == spelled:
            return f"`torch.compile({spelled})` at line {call.lineno}"
        if isinstance(call.func, ast.Attribute) and call.func.attr == "compile" and not call.args \
                and semantic.qualified(call.func) is None and dotted(call.func.value) == spelled:
            return f"`{spelled}.compile()` at line {call.lineno}"
    return ""


def _same_binding(spelled: str, enabled: Frame, compiled_at: Frame) -> bool:
    """Whether `spelled` names the same object at both places, by Python's scoping: a bare name is local to
    its innermost function (the module's when there is none), `self.x` belongs to the class. Two test
    functions that both call their model `model` do not compile each other's."""
    if spelled.split(".", 1)[0] in ("self", "cls"):
        return enabled.class_ is not None and enabled.class_ is compiled_at.class_
    return enabled.function is compiled_at.function


def _trainer_compile(semantic: Semantic) -> Iterator[Violation]:
    """`TrainingArguments(torch_compile=True)` with reentrant Trainer checkpointing."""
    for trainer in semantic.trainer_checkpointing():
        compile_flag = keyword(trainer.args.node, "torch_compile")
        if compile_flag is None or semantic.literal(compile_flag.value, trainer.args.frame) is not True:
            continue
        if trainer.reentrant is not True:
            continue
        name = trainer.kwargs.arg if trainer.kwargs is not None and trainer.kwargs.arg \
            else hf.kwargs_name(trainer.flag.arg or hf.OLD)
        assumes, at_most, note = hf.qualify(trainer.assumed)
        fix = edits.fix("Use non-reentrant checkpointing (`use_reentrant=False`)", Applicability.UNSAFE,
                        edits.set_keyword(semantic, trainer.args.node, name, '{"use_reentrant": False}'))
        yield Violation(trainer.flag, (
            f"reentrant `{trainer.flag.arg}=True` with `torch_compile=True` (line {compile_flag.lineno}): the Trainer "
            "compiles the model, so transformers' checkpoint calls run inside the compiled forward, where dynamo "
            "traces them as its non-reentrant higher-order op and a graph break falls back to eager reentrant "
            f'checkpointing; pass `{name}={{"use_reentrant": False}}`') + note, edits.fixes(fix), assumes, at_most)


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
