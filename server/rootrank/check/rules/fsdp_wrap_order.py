"""checkpoint.fsdp-wrap-order: `checkpoint_wrapper` applied on top of an FSDP (v1) unit instead of inside it.

## What it does
Flags, for PyTorch's `FullyShardedDataParallel` (FSDP1) and fairscale's FSDP:

- `checkpoint_wrapper(FSDP(module, ...))`, nested directly;
- `x = FSDP(block)` followed in the same scope by `checkpoint_wrapper(x)`, when `x` is provably still
  that FSDP module (the assignment runs on every path to the call and `x` is not rebound in between);
- `FSDP(block)` followed by `checkpoint_wrapper(block)`: the inner module, checkpointed outside its unit;
- `apply_activation_checkpointing(..., check_fn=lambda m: isinstance(m, FSDP))`, which builds
  `checkpoint_wrapper(FSDP(...))` for every unit.

`fully_shard` (FSDP2) in either order is not flagged: measured on torch 2.13 it costs nothing extra.
`apply_activation_checkpointing(fsdp_model, check_fn=<block class>)` is not flagged either: it wraps the
blocks *inside* the FSDP units, which is the order PyTorch documents.

## Why is this bad?
With the checkpoint outside the FSDP unit, the recomputation in backward goes through FSDP's forward
hooks. With REENTRANT checkpointing every such unit all-gathers its parameters twice in backward (torch
2.13: 4 instead of 2 all-gathers for two units; fairscale#777 for fairscale); on the PyTorch 1.13
nightlies the order failed in backward with both implementations (pytorch#82203). Checkpointing the
inner module of an FSDP1 unit runs it on FSDP's flattened, sharded parameters and forward fails.

## Fix safety
For the nested form a display-only fix swaps the wrappers (`FSDP(checkpoint_wrapper(module, ...), ...)`).
It is not applied: the module tree, the FSDP root and its auto-wrap policy then see a `CheckpointWrapper`,
and state-dict keys gain the `_checkpoint_wrapped_module.` prefix outside FSDP's own state-dict handling.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CHECKPOINT_WRAPPER, CallSite, CheckpointSite, Frame, Semantic, keyword
from rootrank.model import Applicability, Severity

RULE = "checkpoint.fsdp-wrap-order"

TORCH_FSDP = frozenset({"torch.distributed.fsdp.FullyShardedDataParallel",
                        "torch.distributed.fsdp.fully_sharded_data_parallel.FullyShardedDataParallel"})
FAIRSCALE_FSDP = frozenset({"fairscale.nn.FullyShardedDataParallel",
                            "fairscale.nn.data_parallel.FullyShardedDataParallel",
                            "fairscale.nn.data_parallel.fully_sharded_data_parallel.FullyShardedDataParallel"})
FAIRSCALE_WRAPPER = frozenset({"fairscale.nn.checkpoint_wrapper", "fairscale.nn.checkpoint.checkpoint_wrapper",
                               "fairscale.nn.checkpoint.checkpoint_activations.checkpoint_wrapper"})
_SWAP = "Apply checkpoint_wrapper before wrapping with FSDP"


@rule(RULE, Severity.WARNING)
def fsdp_wrap_order(semantic: Semantic) -> Iterator[Violation]:
    sites = {id(s.call): s for s in semantic.checkpoints}
    for wrapper in [*semantic.calls_to(CHECKPOINT_WRAPPER), *semantic.calls_to(*sorted(FAIRSCALE_WRAPPER))]:
        call = wrapper.node
        fairscale = semantic.resolve_call(call)[0] in FAIRSCALE_WRAPPER
        module = _module_argument(call)
        if module is None:
            continue
        checkpoint = sites.get(id(call))
        if isinstance(module, ast.Call) and _fsdp_kind(semantic, module, fairscale):
            yield Violation(call.func, _outside_message(checkpoint, fairscale, ""),
                            edits.fixes(_swap_fix(semantic, call, module)))
        elif isinstance(module, ast.Name):
            found = _earlier_fsdp(semantic, module.id, wrapper, fairscale)
            if found is None:
                continue
            fsdp, is_wrapper = found
            where = f"`{module.id}` was wrapped with FSDP on line {fsdp.node.lineno}"
            if is_wrapper:
                yield Violation(call.func, _outside_message(checkpoint, fairscale, where))
            elif not fairscale:
                yield Violation(call.func, (
                    f"{where}, which took over its parameters (flattened and sharded): `checkpoint_wrapper"
                    f"({module.id})` runs the module outside its FSDP unit, on sharded parameters, and its forward "
                    "fails; checkpoint the module first, then wrap it: FSDP(checkpoint_wrapper(module))"))
    for site in semantic.checkpoints:
        if site.api != "apply_activation_checkpointing":
            continue
        check_fn = keyword(site.call, "check_fn")
        if check_fn is not None and _selects_fsdp(semantic, check_fn.value):
            yield Violation(check_fn, (
                "`check_fn` selects the FSDP units, so every unit becomes checkpoint_wrapper(FSDP(...)), with the "
                "checkpoint outside the unit" + _mode_consequence(site.reentrant)
                + "; select the blocks inside the units instead (`isinstance(m, Block)`), which gives "
                "FSDP(checkpoint_wrapper(block))"))


def _module_argument(call: ast.Call) -> ast.expr | None:
    if call.args:
        return None if isinstance(call.args[0], ast.Starred) else call.args[0]
    given = keyword(call, "module")
    return given.value if given is not None else None


def _fsdp_kind(semantic: Semantic, call: ast.Call, fairscale: bool) -> bool:
    """Whether `call` builds an FSDP1 unit of the library whose checkpoint_wrapper is in use."""
    return semantic.resolve_call(call)[0] in (FAIRSCALE_FSDP if fairscale else TORCH_FSDP)


def _mode_consequence(reentrant: bool | None) -> str:
    if reentrant is True:
        return ": with REENTRANT checkpointing, backward all-gathers the unit's parameters twice (once more to recompute)"
    if reentrant is False:
        return (": it failed in backward on the PyTorch 1.13 nightlies (pytorch#82203); torch 2.13 runs it at the "
                "same cost, but with REENTRANT it all-gathers each unit twice in backward")
    return (": with REENTRANT checkpointing, backward all-gathers each unit twice, and on the PyTorch 1.13 nightlies "
            "this order failed in backward (pytorch#82203)")


def _outside_message(checkpoint: CheckpointSite | None, fairscale: bool, where: str) -> str:
    subject = f"{where}: `checkpoint_wrapper` around it" if where else "`checkpoint_wrapper(FSDP(...))`"
    if fairscale:
        consequence = (": the recomputation in backward all-gathers the unit's parameters a second time "
                       "(fairscale#777)")
    else:
        consequence = _mode_consequence(checkpoint.reentrant if checkpoint is not None else None)
    return (f"{subject} puts the checkpoint outside the FSDP unit{consequence}; apply checkpoint_wrapper first, "
            "then FSDP: FSDP(checkpoint_wrapper(module))")


def _swap_fix(semantic: Semantic, outer: ast.Call, inner: ast.Call) -> edits.Fix | None:
    """`checkpoint_wrapper(FSDP(m, a), b)` -> `FSDP(checkpoint_wrapper(m, b), a)`, display-only."""
    if not outer.args or outer.args[0] is not inner or not inner.args or isinstance(inner.args[0], ast.Starred):
        return None
    rest_outer = [semantic.text(a) for a in outer.args[1:]] + [semantic.text(k) for k in outer.keywords]
    rest_inner = [semantic.text(a) for a in inner.args[1:]] + [semantic.text(k) for k in inner.keywords]
    checkpointed = f"{semantic.text(outer.func)}({', '.join([semantic.text(inner.args[0]), *rest_outer])})"
    text = f"{semantic.text(inner.func)}({', '.join([checkpointed, *rest_inner])})"
    return edits.fix(_SWAP, Applicability.DISPLAY_ONLY, edits.replace(semantic, outer, text))


def _selects_fsdp(semantic: Semantic, check_fn: ast.expr) -> bool:
    """`lambda m: isinstance(m, FSDP)` (or a tuple holding FSDP): the check selects the FSDP units."""
    if not (isinstance(check_fn, ast.Lambda) and len(check_fn.args.args) == 1):
        return False
    body = check_fn.body
    if not (isinstance(body, ast.Call) and isinstance(body.func, ast.Name) and body.func.id == "isinstance"
            and len(body.args) == 2 and isinstance(body.args[0], ast.Name)
            and body.args[0].id == check_fn.args.args[0].arg):
        return False
    classes = body.args[1].elts if isinstance(body.args[1], ast.Tuple) else [body.args[1]]
    return any(semantic.qualified(c) in TORCH_FSDP for c in classes)


# ---------------------------------------------------------------------- "x was wrapped earlier"


def _earlier_fsdp(semantic: Semantic, name: str, wrapper: CallSite, fairscale: bool) -> tuple[CallSite, bool] | None:
    """The FSDP call that last wrapped `name` (or whose result `name` is) before `wrapper`, in the same scope.

    Returns (the FSDP call, True when `name` is the FSDP module itself / False when it is the inner module),
    or None when that cannot be proven: another scope, a branch or loop the call does not share, a rebinding
    of `name` in between, or a `global`/`nonlocal` declaration of it.
    """
    call_start = _start(wrapper.node)
    best: tuple[CallSite, bool] | None = None
    for site in semantic.calls_to(*sorted(FAIRSCALE_FSDP if fairscale else TORCH_FSDP)):
        if not (_same_scope(site.frame, wrapper.frame) and _dominates(site.frame, wrapper.frame)):
            continue
        if _end(site.node) > call_start:
            continue
        statement = _statement_of(semantic, site.node, site.frame)
        if statement is None:
            return None
        if _assigns_to(statement, name, site.node):
            candidate = (site, True)
        elif site.node.args and isinstance(site.node.args[0], ast.Name) and site.node.args[0].id == name \
                and name not in _bound_names(statement):
            candidate = (site, False)
        else:
            continue
        if best is None or _start(site.node) > _start(best[0].node):
            best = candidate
    if best is None:
        return None
    statement = _statement_of(semantic, best[0].node, best[0].frame)
    assert statement is not None
    if _rebound_between(semantic, name, wrapper, _end(statement), call_start):
        return None
    return best


def _start(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "lineno", 0), getattr(node, "col_offset", 0)


def _end(node: ast.AST) -> tuple[int, int]:
    return getattr(node, "end_lineno", None) or 0, getattr(node, "end_col_offset", None) or 0


def _contains(outer: ast.AST, inner: ast.AST) -> bool:
    return _start(outer) <= _start(inner) and _end(inner) <= _end(outer)


def _same_scope(a: Frame, b: Frame) -> bool:
    return a.functions == b.functions and a.class_ is b.class_


def _dominates(earlier: Frame, later: Frame) -> bool:
    """Every branch and loop around `earlier` also surrounds `later` (so it ran before it)."""
    return (later.branches[:len(earlier.branches)] == earlier.branches
            and later.loops[:len(earlier.loops)] == earlier.loops)


def _scope_statements(semantic: Semantic, frame: Frame) -> list[ast.stmt] | None:
    """The statements of the scope `frame` belongs to (a function body, or the whole module)."""
    if frame.function is not None:
        return frame.function.body
    if frame.class_ is not None:
        return frame.class_.body
    tree = semantic.memo.get("fsdp-wrap-order:module")
    if tree is None:
        try:
            tree = ast.parse(semantic.source)
        except (SyntaxError, RecursionError, ValueError, MemoryError):
            tree = False
        semantic.memo["fsdp-wrap-order:module"] = tree
    return tree.body if isinstance(tree, ast.Module) else None


def _scope_nodes(statements: list[ast.stmt]) -> Iterator[ast.AST]:
    """Nodes of one scope: nested functions, lambdas, classes and comprehensions are not entered."""
    stack: list[ast.AST] = list(reversed(statements))
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Lambda, ast.ListComp,
                             ast.SetComp, ast.DictComp, ast.GeneratorExp)):
            continue
        stack.extend(reversed(list(ast.iter_child_nodes(node))))


def _statement_of(semantic: Semantic, node: ast.AST, frame: Frame) -> ast.stmt | None:
    """The innermost statement of the scope that contains `node`."""
    statements = _scope_statements(semantic, frame)
    if statements is None:
        return None
    found: ast.stmt | None = None
    for candidate in _scope_nodes(statements):
        if isinstance(candidate, ast.stmt) and _contains(candidate, node):
            found = candidate
    return found


def _assigns_to(statement: ast.stmt, name: str, value: ast.expr) -> bool:
    """`name = <value>` (or `name: T = <value>`): the plain name receives exactly this value."""
    # Compared by position: at module level the statement comes from a whole-file parse, the call from a chunk's.
    if isinstance(statement, ast.Assign) and _same_span(statement.value, value):
        return any(isinstance(t, ast.Name) and t.id == name for t in statement.targets)
    if isinstance(statement, ast.AnnAssign) and statement.value is not None and _same_span(statement.value, value):
        return isinstance(statement.target, ast.Name) and statement.target.id == name
    return False


def _same_span(a: ast.AST, b: ast.AST) -> bool:
    return _start(a) == _start(b) and _end(a) == _end(b)


def _bound_names(statement: ast.stmt) -> set[str]:
    """Names a simple statement binds (its targets); compound statements bind nothing here."""
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = list(statement.targets)
    elif isinstance(statement, (ast.AnnAssign, ast.AugAssign)):
        targets = [statement.target]
    names = {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    names |= {n.target.id for n in ast.walk(statement) if isinstance(n, ast.NamedExpr)}
    return names


def _rebound_between(semantic: Semantic, name: str, wrapper: CallSite, after: tuple[int, int],
                     before: tuple[int, int]) -> bool:
    """Whether `name` may be rebound after `after` and before the wrapper call runs (or anywhere, when unknown)."""
    statements = _scope_statements(semantic, wrapper.frame)
    if statements is None:
        return True
    for node in ast.walk(ast.Module(body=statements, type_ignores=[])):
        if isinstance(node, (ast.Global, ast.Nonlocal)) and name in node.names:
            return True  # rebindable from elsewhere
    for node in _scope_nodes(statements):
        if not _binds(node, name) or not (after <= _start(node) < before):
            continue
        if isinstance(node, ast.Name):
            # `name = checkpoint_wrapper(name)`: the target is bound after the call runs. (A `for name in ...:`
            # or `with ... as name:` around the call binds it before, and counts.)
            owner = _statement_of(semantic, node, wrapper.frame)
            if isinstance(owner, (ast.Assign, ast.AnnAssign, ast.AugAssign)) and owner.value is not None \
                    and _contains(owner.value, wrapper.node):
                continue
        return True
    return False


def _binds(node: ast.AST, name: str) -> bool:
    if isinstance(node, ast.Name):
        return node.id == name and isinstance(node.ctx, (ast.Store, ast.Del))
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
        return node.name == name
    if isinstance(node, (ast.Import, ast.ImportFrom)):
        return any((a.asname or a.name.split(".")[0]) == name for a in node.names)
    if isinstance(node, ast.ExceptHandler):
        return node.name == name
    if isinstance(node, (ast.MatchAs, ast.MatchStar)):
        return node.name == name
    if isinstance(node, ast.MatchMapping):
        return node.rest == name
    return False
