"""Small fix builders over `ast` positions: add or change a keyword argument, replace a node's text.

Edits only ever cover the node they are about, so a fix never touches text outside its call. Keyword
insertion goes right after the last argument (as ruff does), which keeps trailing commas, comments and
multi-line layouts intact: `f(a,  # note\\n)` becomes `f(a, use_reentrant=False,  # note\\n)`.
"""

from __future__ import annotations

import ast

from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, Semantic, bound_positionally
from rootrank.model import Applicability, Edit, Fix


def replace(semantic: Semantic, node: ast.AST, text: str) -> Edit:
    line, column, end_line, end_column = semantic.span(node)
    return Edit(line, column, end_line, end_column, text)


def add_keyword(semantic: Semantic, call: ast.Call, text: str, api: str = "") -> Edit | None:
    """Insert `text` (e.g. `use_reentrant=False`) as the last argument of `call`; None when unsafe to place.

    Never where the call could then bind the argument twice (`TypeError: got multiple values`): when
    a `**kwargs` spread may already carry it, or (for a known `api`) a positional argument binds it.
    """
    name = text.split("=", 1)[0].strip()
    if any(k.arg is None or k.arg == name for k in call.keywords):
        return None
    positional, starred = bound_positionally(call, api)
    if starred or any(k.arg == name for k in positional):
        return None
    arguments: list[ast.AST] = [*call.args, *call.keywords]
    if any(isinstance(a, ast.GeneratorExp) for a in call.args) and len(arguments) == 1:
        return None  # `f(x for x in y)`: the generator's parentheses are the call's; leave it to a human.
    if not arguments:
        _, _, end_line, end_column = semantic.span(call)
        # The call ends just after its `)`: insert right before it.
        return Edit(end_line, end_column - 1, end_line, end_column - 1, text)
    last = max(arguments, key=lambda a: (getattr(a, "end_lineno", 0), getattr(a, "end_col_offset", 0)))
    _, _, end_line, end_column = semantic.span(last)
    return Edit(end_line, end_column, end_line, end_column, f", {text}")


def set_keyword(semantic: Semantic, call: ast.Call, name: str, value: str, api: str = "") -> Edit | None:
    """Make `name=value` hold in `call`: replace the existing value (passed by keyword, or by position for
    a known `api`), or add the keyword."""
    positional, starred = bound_positionally(call, api)
    for keyword in (*positional, *call.keywords):
        if keyword.arg == name:
            return replace(semantic, keyword.value, value)
    if starred:
        return None
    return add_keyword(semantic, call, f"{name}={value}", api)


def fix(title: str, applicability: Applicability, *edits: Edit | None, keeps: str = "") -> Fix | None:
    """A fix of `edits`, or None when one of them could not be placed. `keeps`: the behaviour the fix
    keeps as it is (see Fix.keeps)."""
    if not edits or any(e is None for e in edits):
        return None
    return Fix(title, applicability, tuple(e for e in edits if e is not None), keeps)


def fixes(*candidates: Fix | None) -> tuple[Fix, ...]:
    return tuple(f for f in candidates if f is not None)


def call_directly(semantic: Semantic, call: ast.Call) -> Edit | None:
    """`checkpoint(fn, a, b, use_reentrant=False)` -> `fn(a, b)`; None when arguments would be lost."""
    if not call.args or isinstance(call.args[0], ast.Starred):
        return None
    passed = [k for k in call.keywords if k.arg not in CHECKPOINT_OWN_KEYWORDS]
    if any(k.arg is None for k in call.keywords):
        return None
    parts = [semantic.text(a) for a in call.args[1:]] + [semantic.text(k) for k in passed]
    function = semantic.text(call.args[0])
    if not isinstance(call.args[0], (ast.Name, ast.Attribute, ast.Subscript, ast.Call)):
        function = f"({function})"  # a lambda must be parenthesised before it is called
    return replace(semantic, call, f"{function}({', '.join(parts)})")


def use_non_reentrant(semantic: Semantic, call: ast.Call, api: str) -> Fix | None:
    """The unsafe fix shared by the reentrant-* rules: switch this call to non-reentrant checkpointing."""
    if api in ("checkpoint_wrapper", "apply_activation_checkpointing"):
        return None  # the enum needs an import that may not be there; the message says what to write
    if api == "gradient_checkpointing_enable":
        edit = set_keyword(semantic, call, "gradient_checkpointing_kwargs", '{"use_reentrant": False}', api)
    else:
        edit = set_keyword(semantic, call, "use_reentrant", "False", api)
    return fix("Use non-reentrant checkpointing (`use_reentrant=False`)", Applicability.UNSAFE, edit)
