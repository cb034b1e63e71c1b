"""The "Ignore <id> on this line" edit: add `# noqa: <id>` or extend the line's existing noqa list.

Where the comment goes is the engine's decision (rootrank.check.noqa: comments found by the file's own
tokenizer, so a `# noqa` inside a string is never taken for one and the new comment never lands in a
string); this module only turns it into the client's positions.
"""

from __future__ import annotations

from lsprotocol import types

from rootrank.check.noqa import NOQA, Text, insertion
from rootrank.lsp.convert import Lines

__all__ = ["NOQA", "noqa_edit"]


def noqa_edit(lines: Lines, index: int, rule: str, language: str = "python",
              column: int = 1) -> types.TextEdit | None:
    """The edit silencing `rule` for a finding on the 0-based line `index` (at the 1-based character
    `column`: where its code starts), or None when none is needed or possible.

    `language`: how the document writes comments (rootrank.check.noqa.language_of)."""
    edit = insertion(Text(lambda n: lines.line(n - 1), len(lines), lambda: _text(lines)), language, index + 1,
                     column, rule)
    if edit is None:
        return None
    return types.TextEdit(lines.range(edit.line, edit.column, edit.end_line, edit.end_column), edit.text)


_LAST: list[tuple[Lines, str]] = []  # one document's joined text (YAML, shell), reused for its diagnostics


def _text(lines: Lines) -> str:
    last = _LAST[0] if _LAST else None
    if last is not None and last[0] is lines:
        return last[1]
    text = "\n".join(lines.lines) + "\n"
    _LAST[:] = [(lines, text)]
    return text
