"""checkpoint.partial-coverage: checkpointing applied to only some of the blocks.

## What it does
Flags a checkpoint inside a loop over blocks when an `if` on the loop variable decides which blocks
are checkpointed, a loop over a slice of the blocks (`self.blocks[:k]`), and an
`apply_activation_checkpointing(check_fn=lambda m: isinstance(m, C))` whose class `C` is never built
in the file while the blocks are. It says "N of M blocks" when the numbers are in the file.

## Why is this bad?
Memory is set by the un-checkpointed blocks: a run that "has checkpointing on" still runs out of
memory, or keeps far more activations than planned. Sometimes this is deliberate (selective
checkpointing); then silence it with `# noqa: checkpoint.partial-coverage`.

## Fix safety
No fix: which blocks to checkpoint is a memory/compute decision.
"""

from __future__ import annotations

import ast
import operator
from collections.abc import Callable, Iterator
from typing import Any

from rootrank.check.names import dotted
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import (
    APPLY_ACTIVATION_CHECKPOINTING,
    CheckpointSite,
    Semantic,
    keyword,
    target_names,
)
from rootrank.model import Severity

RULE = "checkpoint.partial-coverage"
_OPS: dict[type, Callable[[Any, Any], Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Mod: operator.mod,
    ast.FloorDiv: operator.floordiv, ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
    ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne,
}


@rule(RULE, Severity.WARNING)
def partial_coverage(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.checkpoints:
        if site.api not in ("checkpoint", "checkpoint_wrapper") or not site.frame.loops:
            continue
        loop = site.frame.loops[-1]
        if not isinstance(loop, (ast.For, ast.AsyncFor)):
            continue
        violation = _conditional(semantic, site, loop) or _sliced(semantic, site, loop)
        if violation is not None:
            yield violation
    yield from _unrolled(semantic)
    yield from _check_fn(semantic)


def _blocks(loop: ast.For | ast.AsyncFor) -> tuple[ast.expr, str | None]:
    """The iterated blocks expression (inside enumerate) and the index variable, if any."""
    source, index = loop.iter, None
    if isinstance(source, ast.Call) and isinstance(func := source.func, ast.Name) and source.args:
        if func.id == "enumerate" and isinstance(loop.target, ast.Tuple) and loop.target.elts \
                and isinstance(first := loop.target.elts[0], ast.Name):
            source, index = source.args[0], first.id
        elif func.id == "range" and isinstance(loop.target, ast.Name):
            index = loop.target.id
            if len(source.args) == 1 and isinstance(source.args[0], ast.Call) \
                    and getattr(source.args[0].func, "id", None) == "len" and source.args[0].args:
                source = source.args[0].args[0]
    return source, index


def _count(semantic: Semantic, site: CheckpointSite, blocks: ast.expr) -> int | None:
    """M: the number of blocks, from `range(M)` or `self.x = nn.ModuleList([... for _ in range(M)])`."""
    if isinstance(blocks, ast.Call) and getattr(blocks.func, "id", None) == "range" and len(blocks.args) == 1:
        value = semantic.literal(blocks.args[0], site.frame)
        return value if isinstance(value, int) and not isinstance(value, bool) else None
    spelled = dotted(blocks)
    if spelled is None:
        return None
    for assign in semantic.assigned(spelled):
        if site.frame.class_ is not None and assign.frame.class_ is not site.frame.class_:
            continue
        for node in ast.walk(assign.value):
            if isinstance(node, ast.comprehension) and isinstance(node.iter, ast.Call) \
                    and getattr(node.iter.func, "id", None) == "range" and len(node.iter.args) == 1:
                value = semantic.literal(node.iter.args[0], assign.frame)
                if isinstance(value, int) and not isinstance(value, bool):
                    return value
    return None


def _conditional(semantic: Semantic, site: CheckpointSite, loop: ast.For | ast.AsyncFor) -> Violation | None:
    depth = len(site.frame.loops)
    names = target_names(loop.target)
    branches = [(node, negated) for node, negated, around in site.frame.branches
                if around == depth and {n.id for n in ast.walk(node.test) if isinstance(n, ast.Name)} & names]
    if not branches:
        return None
    blocks, index = _blocks(loop)
    walked = blocks.value if isinstance(blocks, ast.Subscript) else blocks
    if isinstance(walked, ast.Call) and index is None:
        # A walk over every module (`named_modules()`, a helper's list) where the `if` decides which ones
        # are blocks (a wrap policy, `isinstance(m, Block)`): selecting the blocks, not leaving some out.
        return None
    label = f"`{dotted(blocks) or semantic.text(blocks)}`"
    total = _count(semantic, site, blocks)
    covered = None
    if total is not None and index is not None:
        covered = _covered(semantic, site, branches, index, total)
    if_line = branches[0][0].lineno
    if covered is not None and total is not None:
        if covered == total:
            return None
        head = f"checkpointing covers {covered} of {total} blocks"
    else:
        head = "checkpointing covers only some of the blocks"
    return Violation(site.call.func, f"{head}: the `if` at line {if_line} inside the loop over {label} leaves the "
                                     "other blocks un-checkpointed, and they set peak memory")


def _covered(semantic: Semantic, site: CheckpointSite, branches: list[tuple[ast.If, bool]], index: str,
             total: int) -> int | None:
    count = 0
    for i in range(total):
        for node, negated in branches:
            value = _evaluate(semantic, site, node.test, index, i)
            if value is None:
                return None
            if bool(value) == negated:
                break
        else:
            count += 1
    return count


def _evaluate(semantic: Semantic, site: CheckpointSite, expr: ast.expr, index: str, i: int) -> object | None:
    """Evaluate a small arithmetic/comparison test with the loop index bound to `i`; None if unknown."""
    if isinstance(expr, ast.Name) and expr.id == index:
        return i
    if isinstance(expr, ast.BinOp) and type(expr.op) in _OPS:
        left, right = (_evaluate(semantic, site, e, index, i) for e in (expr.left, expr.right))
        if left is None or right is None or (isinstance(expr.op, (ast.Mod, ast.FloorDiv)) and right == 0):
            return None
        return _OPS[type(expr.op)](left, right)
    if isinstance(expr, ast.Compare) and len(expr.ops) == 1 and type(expr.ops[0]) in _OPS:
        left, right = (_evaluate(semantic, site, e, index, i) for e in (expr.left, expr.comparators[0]))
        return None if left is None or right is None else _OPS[type(expr.ops[0])](left, right)
    if isinstance(expr, ast.BoolOp):
        values = [_evaluate(semantic, site, v, index, i) for v in expr.values]
        if any(v is None for v in values):
            return None
        return all(values) if isinstance(expr.op, ast.And) else any(values)
    if isinstance(expr, ast.UnaryOp) and isinstance(expr.op, ast.Not):
        value = _evaluate(semantic, site, expr.operand, index, i)
        return None if value is None else not value
    value = semantic.literal(expr, site.frame)
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _sliced(semantic: Semantic, site: CheckpointSite, loop: ast.For | ast.AsyncFor) -> Violation | None:
    blocks, _ = _blocks(loop)
    if not (isinstance(blocks, ast.Subscript) and isinstance(blocks.slice, ast.Slice)):
        return None
    if isinstance(blocks.value, ast.Call):
        # A slice of a computed list (`get_module_children_bottom_up(model)[:-1]` drops the root itself):
        # what it leaves out is not known to be blocks.
        return None
    part = blocks.slice
    if part.lower is None and part.upper is None and part.step is None:
        return None
    singles = _single_indices(semantic, site, dotted(blocks.value))  # `checkpoint(self.layers[0], x)` nearby
    total = _count(semantic, site, blocks.value)
    if singles and total is None:
        return None
    bounds = [None if e is None else semantic.literal(e, site.frame) for e in (part.lower, part.upper, part.step)]
    label = f"`{semantic.text(blocks)}`"
    if total is not None and all(b is None or (isinstance(b, int) and not isinstance(b, bool)) for b in bounds):
        lower, upper, step = (b if isinstance(b, int) else None for b in bounds)
        covered = len(set(range(total)[slice(lower, upper, step)]) | {i % total for i in singles if -total <= i < total})
        if covered == total:
            return None
        head = f"checkpointing covers {covered} of {total} blocks"
    else:
        head = "checkpointing covers only a slice of the blocks"
    return Violation(site.call.func, f"{head}: the loop runs over {label}; the other blocks are not checkpointed "
                                     "and set peak memory")


def _unrolled(semantic: Semantic) -> Iterator[Violation]:
    """`checkpoint(self.layers[0], x)` then `for layer in self.layers[1:]: x = layer(x)`."""
    groups: dict[tuple[int, str], list[tuple[CheckpointSite, object]]] = {}
    for site in semantic.checkpoints:
        block = site.function
        if site.api != "checkpoint" or not isinstance(block, ast.Subscript) or site.frame.function is None:
            continue
        spelled = dotted(block.value)
        index = semantic.literal(block.slice, site.frame)
        if spelled is not None and isinstance(index, int) and not isinstance(index, bool):
            groups.setdefault((id(site.frame.function), spelled), []).append((site, index))
    for (_, spelled), found in groups.items():
        first = found[0][0]
        assert first.frame.function is not None
        loop = _direct_loop(first.frame.function, spelled)
        if loop is None:
            continue
        total = _count(semantic, first, first.function.value) if isinstance(first.function, ast.Subscript) else None
        covered = len({index for _, index in found})
        head = f"checkpointing covers {covered} of {total} blocks" if total else \
            "checkpointing covers only some of the blocks"
        yield Violation(first.call.func, f"{head}: the loop over `{semantic.text(loop.iter)}` at line {loop.lineno} "
                                         "runs the other blocks without checkpointing, and they set peak memory")


def _single_indices(semantic: Semantic, site: CheckpointSite, spelled: str | None) -> set[int]:
    """Constant indices of `spelled` checkpointed one by one in the same function as `site`."""
    found: set[int] = set()
    for other in semantic.checkpoints:
        block = other.function
        if other.frame.function is site.frame.function and isinstance(block, ast.Subscript) \
                and spelled is not None and dotted(block.value) == spelled:
            index = semantic.literal(block.slice, other.frame)
            if isinstance(index, int) and not isinstance(index, bool):
                found.add(index)
    return found


def _direct_loop(function: ast.AST, spelled: str) -> ast.For | None:
    """A loop in `function` over `spelled` (or a slice of it) that calls its blocks directly."""
    for node in ast.walk(function):
        if not isinstance(node, ast.For) or not isinstance(node.target, ast.Name):
            continue
        source = node.iter.value if isinstance(node.iter, ast.Subscript) else node.iter
        if dotted(source) != spelled:
            continue
        name = node.target.id
        if any(isinstance(call, ast.Call) and isinstance(call.func, ast.Name) and call.func.id == name
               for statement in node.body for call in ast.walk(statement)):
            return node
    return None


def _check_fn(semantic: Semantic) -> Iterator[Violation]:
    built = semantic.built_classes()
    for site in semantic.calls_to(APPLY_ACTIVATION_CHECKPOINTING):
        check = keyword(site.node, "check_fn")
        if check is None or not isinstance(check.value, ast.Lambda):
            continue
        body = check.value.body
        if not (isinstance(body, ast.Call) and getattr(body.func, "id", None) == "isinstance" and len(body.args) == 2):
            continue
        kinds = body.args[1].elts if isinstance(body.args[1], ast.Tuple) else [body.args[1]]
        local = [k.id for k in kinds if isinstance(k, ast.Name) and k.id in semantic.classes]
        if len(local) != len(kinds) or any(name in built for name in local) or not built:
            continue
        yield Violation(check.value, (
            f"`check_fn` can never match: {', '.join(f'`{n}`' for n in local)} is never built in this file "
            f"(the modules built are {', '.join(f'`{n}`' for n in sorted(built))}), so no block is checkpointed"))
