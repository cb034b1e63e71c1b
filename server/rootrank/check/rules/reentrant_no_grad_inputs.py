"""checkpoint.reentrant-no-grad-inputs: reentrant checkpointing whose inputs cannot require grad.

## What it does
Flags reentrant checkpointing when the first checkpointed block's input comes from frozen weights:
- a frozen embedding (`embed.requires_grad_(False)`, `wte.weight.requires_grad = False`, or a
  selective freeze loop over `named_parameters()` that does not keep the embeddings trainable);
- a PEFT/LoRA model (`get_peft_model`, or `prepare_model_for_kbit_training(...,
  use_gradient_checkpointing=False)`) with reentrant checkpointing enabled (the enable call or
  `TrainingArguments(gradient_checkpointing=True)` / `(activation_checkpointing=True)` without
  `use_reentrant=False`) and no `enable_input_require_grads()`, where the installed transformers does
  not make the inputs require grad itself (version-facts topic `transformers.input-grads`; with its
  version unknown, a warning that names the versions it applies to); not when `get_peft_model`
  certainly runs after the enable call (PEFT then enables input grads itself: version-facts topic
  `peft.input-grads-when-checkpointing`);
- adapters attached with `add_adapter()`/`load_adapter()` after reentrant
  `gradient_checkpointing_enable()` (transformers only prepares the inputs for adapters loaded before).
`prepare_model_for_kbit_training` with its default `use_gradient_checkpointing=True` makes the
inputs require grad itself, so it is not flagged.

## Why is this bad?
Reentrant checkpointing only builds a graph when an input tensor requires grad. With frozen
embeddings none does: the block's output has no grad_fn, and the trainable parameters inside the
block (LoRA adapters) silently get no gradient. PyTorch only warns "None of the inputs have
requires_grad=True. Gradients will be None".

## Fix safety
`use_reentrant=False` is unsafe (recomputation semantics change); calling
`model.enable_input_require_grads()` before training is the alternative for PEFT models.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits, hf
from rootrank.check.names import dotted
from rootrank.check.registry import Violation, rule
from rootrank.check.rules._common import at_line, report_sites
from rootrank.check.semantic import AssignSite, CallSite, Frame, FunctionNode, Semantic, keyword, target_names
from rootrank.model import Applicability, Severity
from rootrank.stack import facts

RULE = "checkpoint.reentrant-no-grad-inputs"
_EMBEDDING_WORDS = ("emb", "wte", "wpe", "tok_")


@rule(RULE, Severity.WARNING, caused_by="reentrant")
def reentrant_no_grad_inputs(semantic: Semantic) -> Iterator[Violation]:
    if _inputs_made_trainable(semantic):
        return
    yield from _adapters_after_enable(semantic)
    peft = _peft_call(semantic)
    if peft is not None:
        yield from _peft(semantic, peft)
        return
    freeze = _embedding_freeze(semantic)
    if freeze is None:
        return
    sites = [s for s in semantic.reentrant_sites() if not hf.is_enable(s.api)]
    yield from report_sites(semantic, sites, (
        f"reentrant `{{api}}()` whose inputs cannot require grad: the embedding is frozen ({at_line(freeze)}), "
        "so the block's output has no grad_fn and its trainable parameters get no gradient (PyTorch only warns "
        "'None of the inputs have requires_grad=True'); use `use_reentrant=False`"))


def _runs_after(later: ast.AST, earlier: ast.AST, semantic: Semantic) -> bool:
    """Whether `later` certainly runs after `earlier`: both in the same function (or both at module
    level), `later` on a later line and not inside a loop that could run it first."""
    frames = {id(site.node): site.frame for site in semantic.calls}
    first, second = frames.get(id(earlier)), frames.get(id(later))
    if first is None or second is None or first.function is not second.function or second.loops:
        return False
    return (getattr(later, "lineno", 0), getattr(later, "col_offset", 0)) > \
        (getattr(earlier, "lineno", 0), getattr(earlier, "col_offset", 0))


def _adapters_after_enable(semantic: Semantic) -> Iterator[Violation]:
    """`model.add_adapter(...)` / `load_adapter(...)` after reentrant `gradient_checkpointing_enable()`.

    transformers makes the inputs require grad inside `gradient_checkpointing_enable()` only when PEFT
    adapters are already loaded (`_hf_peft_config_loaded`, transformers 4.35-4.57
    modeling_utils.py:3709); adapters attached afterwards sit behind frozen inputs and get no gradient.
    """
    input_grads = semantic.fact("transformers.input-grads")
    if input_grads.is_(True):
        return  # transformers >= 5.0 makes an `input_ids` model's inputs require grad whatever is attached later
    enables = [s for s in semantic.reentrant_sites() if hf.is_enable(s.api)]
    for method in ("add_adapter", "load_adapter"):
        for attach in semantic.method_calls(method):
            enable = next((e for e in enables if _runs_after(attach.node, e.call, semantic)), None)
            if enable is None:
                continue
            assumes, at_most, note = _qualify(input_grads, enable.assumed)
            yield Violation(attach.node.func, (
                f"`{method}()` after reentrant `{enable.api}()` ({at_line(enable.call)}): "
                "transformers makes the inputs require grad only for adapters loaded before checkpointing was "
                "enabled, so these adapters get no gradient; attach them first, call "
                "`model.enable_input_require_grads()`, or pass "
                f'`{hf.kwargs_name(enable.api)}={{"use_reentrant": False}}`') + note,
                edits.fixes(edits.use_non_reentrant(semantic, enable.call, enable.api)), assumes, at_most)


def _inputs_made_trainable(semantic: Semantic) -> bool:
    if any(semantic.method_calls("enable_input_require_grads")) or any(semantic.method_calls("register_forward_hook")) \
            or any(semantic.method_calls("prepare_model_for_gradient_checkpointing")):
        return True  # (PeftModel.prepare_model_for_gradient_checkpointing calls enable_input_require_grads)
    for site in semantic.method_calls("requires_grad_"):
        args = site.node.args
        if not args or semantic.literal(args[0]) is True:
            return True
    return False


def _peft_call(semantic: Semantic) -> ast.Call | None:
    for site in semantic.calls:
        name = semantic.qualified(site.node.func) or ""
        if not name.startswith("peft."):
            continue
        if name.endswith(".get_peft_model"):
            return site.node
        if name.endswith(".prepare_model_for_kbit_training"):
            flag = keyword(site.node, "use_gradient_checkpointing")
            if flag is not None and semantic.literal(flag.value) is False:
                return site.node
    return None


def _peft(semantic: Semantic, peft: ast.Call) -> Iterator[Violation]:
    # transformers >= 5.0 makes the embedding outputs require grad itself when checkpointing is enabled on
    # an `input_ids` model (PEFT models included): then reentrant checkpointing trains the adapters.
    input_grads = semantic.fact("transformers.input-grads")
    if input_grads.is_(True):
        return

    def message(name: str, wrap: ast.Call = peft) -> str:
        return ("reentrant gradient checkpointing on a PEFT model without `enable_input_require_grads()` "
                f"(PEFT wraps the model at {at_line(wrap)}): the frozen embeddings feed the first checkpointed "
                "block inputs that do not require grad, so the adapters get no gradient; pass "
                f'`{name}={{"use_reentrant": False}}` or call `model.enable_input_require_grads()`')

    wraps = [c for c in semantic.calls if (semantic.qualified(c.node.func) or "").endswith(".get_peft_model")]
    for site in semantic.reentrant_sites():
        reaching = [w for w in wraps if _reaches(w, site.frame, semantic)]
        if hf.is_enable(site.api) and not any(_runs_after(w.node, site.call, semantic) for w in wraps) and reaching:
            assumes, at_most, note = _qualify(input_grads, site.assumed)
            yield Violation(site.call.func, message(hf.kwargs_name(site.api), reaching[0].node) + note,
                            edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api)), assumes, at_most)
    for trainer in semantic.trainer_checkpointing():
        args = trainer.args
        if semantic.trl_sets_non_reentrant(args) or (semantic.qualified(args.node.func) or "").startswith("trl."):
            continue  # TRL's trainers make a PEFT model's inputs require grad themselves
        if trainer.reentrant is not True:
            continue
        name = trainer.kwargs.arg if trainer.kwargs is not None and trainer.kwargs.arg \
            else hf.kwargs_name(trainer.flag.arg or hf.OLD)
        edit = edits.set_keyword(semantic, trainer.args.node, name, '{"use_reentrant": False}')
        assumes, at_most, note = _qualify(input_grads, trainer.assumed)
        yield Violation(trainer.flag, message(name) + note, edits.fixes(
            edits.fix("Use non-reentrant checkpointing (`use_reentrant=False`)", Applicability.UNSAFE, edit)),
            assumes, at_most)


def _reaches(wrap: CallSite, frame: Frame, semantic: Semantic) -> bool:
    """Whether the model `get_peft_model` wraps can be the one checkpointed in `frame`. Not when the wrap sits
    in another function that keeps it to itself: that function stores the model on no attribute, wrapped no
    model it was given (PEFT injects the adapters into the model passed in), and returns nothing, or returns
    it only to callers other than `frame`'s function. Two tests of one test module are the usual shape."""
    if _exclusive(wrap.frame, frame):
        return False
    function = wrap.frame.function
    if function is None or frame.function is None or function is frame.function:
        return True
    if any(isinstance(n, ast.Return) and n.value is not None for n in ast.walk(function)):
        return function.name in _called_from(frame.function, semantic)
    given = {a.arg for a in (*function.args.posonlyargs, *function.args.args, *function.args.kwonlyargs)}
    model = wrap.node.args[0] if wrap.node.args else None
    if model is None or not isinstance(model, ast.Name) or model.id in given:
        return True
    parent = next((n for n in ast.walk(function) if isinstance(n, (ast.Assign, ast.AnnAssign))
                   and n.value is wrap.node), None)
    targets = (parent.targets if isinstance(parent, ast.Assign) else [parent.target]) if parent is not None else []
    return parent is None or not all(isinstance(t, ast.Name) for t in targets) or \
        any(isinstance(n, (ast.Global, ast.Nonlocal)) for n in ast.walk(function))


def _exclusive(first: Frame, second: Frame) -> bool:
    """Whether the two places sit in different arms of one `if` (`if lora: wrap ... elif ...: enable`) that no
    loop runs again: one run takes only one of them."""
    arms = {id(node): (orelse, loops) for node, orelse, loops in first.branches}
    return any(id(node) in arms and arms[id(node)] == (not orelse, 0) and loops == 0
               for node, orelse, loops in second.branches)


def _called_from(function: FunctionNode, semantic: Semantic) -> set[str]:
    """Names of the file's functions that `function` calls, directly or through the file's other functions."""
    bodies = {f.name: f for f, _ in semantic.functions}
    seen: set[str] = set()
    todo: list[FunctionNode] = [function]
    while todo:
        for node in ast.walk(todo.pop()):
            if isinstance(node, ast.Call):
                name = node.func.attr if isinstance(node.func, ast.Attribute) else \
                    node.func.id if isinstance(node.func, ast.Name) else None
                if name in bodies and name not in seen:
                    seen.add(name)
                    todo.append(bodies[name])
    return seen


def _qualify(input_grads: facts.Answer, mode: facts.Answer | None) -> tuple[tuple[str, ...], Severity | None, str]:
    """Both answers the finding rests on: the version it assumed, capped to a warning when unknown."""
    assumes, at_most, note = hf.qualify(input_grads)
    if not input_grads.known:
        note = f" (applies to {input_grads.topic.versions_where(False)}; {input_grads.assumed})"
    more, cap, mode_note = hf.qualify(mode)
    return tuple(dict.fromkeys((*assumes, *more))), at_most or cap, note or mode_note


def _embedding_freeze(semantic: Semantic) -> ast.AST | None:
    for site in semantic.method_calls("requires_grad_"):
        func = site.node.func
        assert isinstance(func, ast.Attribute)
        if site.node.args and semantic.literal(site.node.args[0]) is False and _embedding(dotted(func.value)):
            return site.node
    for assign in semantic.assigns:
        for target in assign.targets:
            if not (isinstance(target, ast.Attribute) and target.attr == "requires_grad"):
                continue
            value = semantic.literal(assign.value, assign.frame)
            if value is False and _embedding(dotted(target.value)):
                return target
            if value is False and _frozen_in_loop(target, assign, embedding_only=True):
                return target
            if not isinstance(value, bool) and not _mentions_embedding(assign.value) and _frozen_in_loop(target, assign):
                # `p.requires_grad = "lora_" in name`: everything but the adapters, embeddings too, is frozen.
                # A literal `False` over every parameter freezes the checkpointed blocks as well (a generic
                # `freeze(module)` helper): that says nothing about the blocks' inputs.
                return target
    return None


def _frozen_in_loop(target: ast.Attribute, assign: AssignSite, embedding_only: bool = False) -> bool:
    """`for [name,] p in <module>.named_parameters(): p.requires_grad = ...` (of an embedding, if asked)."""
    subject = dotted(target.value)
    for loop in assign.frame.loops:
        if not isinstance(loop, (ast.For, ast.AsyncFor)) or subject not in target_names(loop.target):
            continue
        source = loop.iter
        if isinstance(source, ast.Call) and isinstance(source.func, ast.Attribute) \
                and source.func.attr in ("parameters", "named_parameters"):
            return _embedding(dotted(source.func.value)) if embedding_only else True
    return False


def _embedding(spelled: str | None) -> bool:
    return spelled is not None and any(word in spelled.lower() for word in _EMBEDDING_WORDS)


def _mentions_embedding(expr: ast.expr) -> bool:
    return any(isinstance(n, ast.Constant) and isinstance(n.value, str) and _embedding(n.value)
               for n in ast.walk(expr))
