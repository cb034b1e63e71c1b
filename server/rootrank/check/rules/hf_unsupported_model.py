"""checkpoint.hf-unsupported-model: gradient checkpointing on a model class that does not support it.

## What it does
Flags `gradient_checkpointing_enable()` (and `TrainingArguments(gradient_checkpointing=True)` in the
same file) on an instance of a `PreTrainedModel` subclass defined in the file without
`supports_gradient_checkpointing = True`.

## Why is this bad?
transformers raises `ValueError: <Model> does not support gradient checkpointing.`; trainers that
catch it only warn and train without checkpointing, with the full activation memory.

## Fix safety
Display-only: adding `supports_gradient_checkpointing = True` silences the error but checkpoints
nothing unless the repeated layers are checkpoint-aware; the fix shows where it goes.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.names import dotted
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import Semantic, keyword
from rootrank.model import Applicability, Edit, Severity

RULE = "checkpoint.hf-unsupported-model"
_BASES = frozenset({"transformers.PreTrainedModel", "transformers.modeling_utils.PreTrainedModel"})


@rule(RULE, Severity.ERROR)
def hf_unsupported_model(semantic: Semantic) -> Iterator[Violation]:
    unsupported = {name: node for name, node in semantic.classes.items() if _unsupported(semantic, node)}
    if not unsupported:
        return
    instances = _instances(semantic, set(unsupported))
    for site in semantic.checkpoints:
        if site.api != "gradient_checkpointing_enable":
            continue
        receiver = site.call.func.value if isinstance(site.call.func, ast.Attribute) else None
        owner = instances.get(dotted(receiver) or "") if receiver is not None else None
        if owner is None:
            continue
        yield Violation(site.call.func, _message(owner), _fixes(semantic, unsupported[owner]))
    for args in semantic.training_arguments():
        enabled = keyword(args.node, "gradient_checkpointing")
        if enabled is not None and semantic.literal(enabled.value, args.frame) is True and len(set(instances.values())) == 1:
            owner = next(iter(instances.values()))
            yield Violation(enabled, _message(owner), _fixes(semantic, unsupported[owner]))


def _message(owner: str) -> str:
    return (f"gradient checkpointing on `{owner}`, whose class does not set `supports_gradient_checkpointing = True`: "
            f"transformers raises 'ValueError: {owner} does not support gradient checkpointing.' (wrappers only warn "
            "and train with full activation memory)")


def _unsupported(semantic: Semantic, node: ast.ClassDef) -> bool:
    if not any(semantic.qualified(base) in _BASES for base in node.bases):
        return False
    for statement in node.body:
        if isinstance(statement, (ast.Assign, ast.AnnAssign)):
            targets = statement.targets if isinstance(statement, ast.Assign) else [statement.target]
            if any(isinstance(t, ast.Name) and t.id == "supports_gradient_checkpointing" for t in targets):
                return semantic.literal(statement.value) is not True
    return True


def _instances(semantic: Semantic, classes: set[str]) -> dict[str, str]:
    """Spellings bound to an instance of one of `classes`: `model = MyModel(cfg)`, `MyModel.from_pretrained(...)`."""
    found: dict[str, str] = {}
    for site in semantic.assigns:
        value = site.value
        func = value.func if isinstance(value, ast.Call) else None
        if isinstance(func, ast.Attribute) and func.attr in ("from_pretrained", "from_config"):
            func = func.value
        if isinstance(func, ast.Name) and func.id in classes:
            for target in site.targets:
                spelled = dotted(target)
                if spelled:
                    found[spelled] = func.id
    return found


def _fixes(semantic: Semantic, node: ast.ClassDef) -> tuple[edits.Fix, ...]:
    first = node.body[0]
    line, column, _, _ = semantic.span(first)
    if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and len(node.body) > 1:
        line, column, _, _ = semantic.span(node.body[1])  # after the docstring
    indent = " " * (column - 1)
    edit = Edit(line, 1, line, 1, f"{indent}supports_gradient_checkpointing = True\n")
    return edits.fixes(edits.fix("Declare `supports_gradient_checkpointing = True` (only with checkpoint-aware layers)",
                                 Applicability.DISPLAY_ONLY, edit))
