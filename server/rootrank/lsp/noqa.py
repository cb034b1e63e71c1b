"""The "Ignore <id> on this line" edit: add `# noqa: <id>` or extend the line's existing noqa list."""

from __future__ import annotations

import re

from lsprotocol import types

from rootrank.lsp.convert import Lines

# The same comment syntax `rootrank check` honours (rootrank.check): a bare noqa comment, or one listing ids.
NOQA = re.compile(r"#\s*noqa(?::[ \t]*(?P<codes>[\w.\-]+(?:[ \t]*,[ \t]*[\w.\-]+)*))?", re.IGNORECASE)


def noqa_edit(lines: Lines, index: int, rule: str) -> types.TextEdit | None:
    """The edit silencing `rule` on the 0-based line `index`, or None when none is needed or possible."""
    text = lines.line(index)
    match = NOQA.search(text)
    if match is not None:
        codes = match.group("codes")
        if not codes or rule in re.split(r"[ \t]*,[ \t]*", codes):
            return None  # a bare noqa comment already silences every rule
        at = lines.position(index + 1, match.end("codes") + 1)
        return types.TextEdit(types.Range(at, at), f", {rule}")
    code = text.rstrip()
    if code.endswith("\\"):
        return None  # a comment after a line continuation would break the statement
    at = lines.position(index + 1, len(code) + 1)
    separator = "  " if code else ""
    return types.TextEdit(types.Range(at, lines.position(index + 1, len(text) + 1)), f"{separator}# noqa: {rule}")
