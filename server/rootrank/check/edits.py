"""Small fix builders over `ast` positions: add or change a keyword argument, replace a node's text.

Edits only ever cover the node they are about, so a fix never touches text outside its call. Keyword
insertion goes right after the last argument (as ruff does), which keeps trailing commas, comments and
multi-line layouts intact: `f(a,  # note\\n)` becomes `f(a, use_reentrant=False,  # note\\n)`.
"""

from __future__ import annotations

import ast
import contextlib
import itertools
import tokenize

from rootrank.check import hf
from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, Semantic, bound_positionally
from rootrank.check.source import Locator
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
    end_line, end_column = _past_closing_parentheses(semantic, call, end_line, end_column)
    return Edit(end_line, end_column, end_line, end_column, f", {text}")


def _past_closing_parentheses(semantic: Semantic, call: ast.Call, line: int, column: int) -> tuple[int, int]:
    """The position after the `)`s that close the last argument's own parentheses: an argument's node ends
    inside them (`f(a, (x + y))`: `x + y` ends before its `)`), and `, kw=...` there would land inside the
    argument (`(x + y, kw=...)`, a SyntaxError). Blanks, comments, line continuations and `)` are stepped
    over, up to the call's own `)`; anything else (a `,`) stops it."""
    locator, source = semantic.locator, semantic.source
    _, _, call_line, call_column = semantic.span(call)
    close = locator.offset(call_line, call_column) - 1  # the call's own `)`
    position = scan = locator.offset(line, column)
    while scan < close:
        char = source[scan]
        if char == ")":
            position = scan + 1
        elif char == "#":  # between two tokens a `#` starts a comment: step to its line's end
            end = source.find("\n", scan)
            scan = close if end < 0 else end
            continue
        elif not char.isspace() and char != "\\":  # a backslash here can only continue the line
            break
        scan += 1
    if position == locator.offset(line, column):
        return line, column
    new_line = locator.line_of(position)
    return new_line, position - locator.offset(new_line, 1) + 1


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
    """`checkpoint(fn, a, b, use_reentrant=False)` -> `fn(a, b)`; None when arguments would be lost.

    Each argument is kept as written between its commas (its own parentheses, as in `(yield x)`, and the
    comments beside it); only checkpoint's own keywords go, and the comments written with them stay."""
    if not call.args or isinstance(call.args[0], ast.Starred):
        return None
    if any(k.arg is None for k in call.keywords):
        return None
    nodes: list[ast.AST] = sorted([*call.args, *call.keywords],
                                  key=lambda n: (getattr(n, "lineno", 0), getattr(n, "col_offset", 0)))
    pieces = _arguments(semantic, call, nodes)
    if pieces is None:
        return None  # a layout the split does not understand: no fix rather than a wrong one
    first = pieces[0]
    lead, function_text, after_function = _split(first)
    if not isinstance(nodes[0], (ast.Name, ast.Attribute, ast.Subscript, ast.Call)) \
            and function_text == semantic.text(nodes[0]):
        function_text = f"({function_text})"  # a lambda must be parenthesised before it is called
    out = _comments(lead) + _comments(after_function)
    comma = kept = False
    for piece, node in zip(pieces[1:len(nodes)], nodes[1:], strict=True):
        if isinstance(node, ast.keyword) and node.arg in CHECKPOINT_OWN_KEYWORDS:
            before, _, after = _split(piece)
            note = _comments(before) + _comments(after)
            if note:  # the keyword goes, the comment written with it stays
                out += "," * comma + note
                comma = False
            continue
        out += "," * comma
        if out.endswith("\n"):
            piece = piece.lstrip("\r\n")
        elif not out and "\n" not in _leading(piece):
            piece = piece.lstrip(" \t")
        out += piece
        comma = kept = True
    tail = pieces[len(nodes)] if len(pieces) > len(nodes) else ""  # after a trailing comma
    if kept and tail:
        out += "," * comma + (tail.lstrip("\r\n") if out.endswith("\n") else tail)
    elif _comments(tail):
        out += "," * comma + _comments(tail)
    return replace(semantic, call, f"{function_text}({out})")


def _split(piece: str) -> tuple[str, str, str]:
    """An argument as (blanks and comments before it, its code, blanks and comments after it)."""
    import io

    lead = _leading(piece)
    wrapped = "(" + piece + "\n)"
    locator = Locator(wrapped)
    end = len(lead)
    with contextlib.suppress(tokenize.TokenError, SyntaxError):
        tokens = list(tokenize.generate_tokens(io.StringIO(wrapped).readline))
        code = [t for t in tokens[1:] if t.type not in _NOT_CODE]
        if len(code) > 1:  # the last one is the closing parenthesis added here
            end = locator.offset(code[-2].end[0], code[-2].end[1] + 1) - 1
    return lead, piece[len(lead):end], piece[end:]


_NOT_CODE = frozenset({tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.ENDMARKER, tokenize.INDENT,
                       tokenize.DEDENT})


def _comments(blank: str) -> str:
    """The comments in a stretch of blanks and comments (ending at the newline after the last one)."""
    return blank.rstrip(" \t") if "#" in blank else ""


def _leading(piece: str) -> str:
    """The blanks and comments before an argument's text."""
    position = 0
    while position < len(piece):
        if piece[position] in " \t\r\n\\":
            position += 1
        elif piece[position] == "#":
            end = piece.find("\n", position)
            position = len(piece) if end < 0 else end
        else:
            break
    return piece[:position]


def _arguments(semantic: Semantic, call: ast.Call, nodes: list[ast.AST]) -> list[str] | None:
    """The call's arguments as written, one piece per argument from comma to comma (with its own
    parentheses and the comments beside it), and after a trailing comma what follows it.

    The AST gives where each argument is; between two of them there is only blanks, parentheses,
    comments and the one separating comma (a string would be part of an argument), so the comma is the
    first `,` outside a comment. None for a layout that does not read that way."""
    source = semantic.source
    locator = semantic.locator

    def offset(line: int, column: int) -> int:
        return locator.offset(line, column)

    _, _, end_line, end_column = semantic.span(call)
    _, _, func_line, func_column = semantic.span(call.func)
    call_end = offset(end_line, end_column) - 1  # its closing parenthesis
    open_at = _first(source, offset(func_line, func_column), offset(*semantic.span(nodes[0])[:2]), "(")
    if open_at is None or source[call_end:call_end + 1] != ")":
        return None
    cuts = [open_at]
    for node, following in itertools.pairwise(nodes):
        _, _, line, column = semantic.span(node)
        comma = _first(source, offset(line, column), offset(*semantic.span(following)[:2]), ",")
        if comma is None:
            return None
        cuts.append(comma)
    _, _, line, column = semantic.span(nodes[-1])
    trailing = _first(source, offset(line, column), call_end, ",")
    if trailing is not None:
        cuts.append(trailing)
    cuts.append(call_end)
    return [source[a + 1:b] for a, b in itertools.pairwise(cuts)]


def _first(source: str, start: int, end: int, char: str) -> int | None:
    """The first `char` in source[start:end] that is not in a comment (the stretch holds no strings)."""
    position = start
    while position < end:
        if source[position] == "#":
            newline = source.find("\n", position, end)
            position = end if newline < 0 else newline
        elif source[position] == char:
            return position
        position += 1
    return None


def use_non_reentrant(semantic: Semantic, call: ast.Call, api: str) -> Fix | None:
    """The unsafe fix shared by the reentrant-* rules: switch this call to non-reentrant checkpointing."""
    if api in ("checkpoint_wrapper", "apply_activation_checkpointing"):
        return None  # the enum needs an import that may not be there; the message says what to write
    if hf.is_enable(api):
        edit = set_keyword(semantic, call, hf.kwargs_name(api), '{"use_reentrant": False}', api)
    else:
        edit = set_keyword(semantic, call, "use_reentrant", "False", api)
    return fix("Use non-reentrant checkpointing (`use_reentrant=False`)", Applicability.UNSAFE, edit)
