"""Positions and records between rootrank's model and LSP.

rootrank counts lines from 1 and columns from 1 in code points, with exclusive ends. LSP counts both from 0,
and columns in the code units the client negotiated (UTF-16 unless it asked for UTF-8 or UTF-32). Lines
end at `\\n`, `\\r\\n` or `\\r` in both (and, unlike `str.splitlines`, at nothing else).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from rootrank.textlines import split_lines

if TYPE_CHECKING:
    from rootrank.model import Edit, Finding, Fix, Severity


LSP_SEVERITY = {
    "error": types.DiagnosticSeverity.Error,
    "warning": types.DiagnosticSeverity.Warning,
    "information": types.DiagnosticSeverity.Information,
    "info": types.DiagnosticSeverity.Information,
    "hint": types.DiagnosticSeverity.Hint,
}


UTF8, UTF16, UTF32 = "utf-8", "utf-16", "utf-32"


def encoding_name(value: object) -> str:
    """"utf-8", "utf-16" or "utf-32" from a negotiated encoding (an enum member, a string, or None)."""
    name = str(getattr(value, "value", value) or UTF16).lower()
    return name if name in (UTF8, UTF32) else UTF16


def _units(text: str, encoding: str) -> int:
    """Length of `text` in the client's code units."""
    if encoding == UTF32 or text.isascii():
        return len(text)
    if encoding == UTF8:
        return len(text.encode("utf-8"))
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


class Lines:
    """A document's lines, converting positions for one client encoding."""

    __slots__ = ("encoding", "lines")

    def __init__(self, text_or_lines: str | Sequence[str], encoding: object = UTF16):
        self.lines = split_lines(text_or_lines) if isinstance(text_or_lines, str) else list(text_or_lines)
        self.encoding = encoding_name(encoding)

    def __len__(self) -> int:
        return len(self.lines)

    def line(self, index: int) -> str:
        """The 0-based line `index`, or "" past the end."""
        return self.lines[index] if 0 <= index < len(self.lines) else ""

    def position(self, line: int, column: int) -> types.Position:
        """A 1-based (line, code-point column) position as an LSP position, clamped into the document."""
        index = min(max(line - 1, 0), max(len(self.lines) - 1, 0))
        if line - 1 >= len(self.lines):  # past the end: the end of the last line
            text = self.line(index)
            return types.Position(index, _units(text, self.encoding))
        text = self.line(index)
        col = min(max(column - 1, 0), len(text))
        return types.Position(index, _units(text[:col], self.encoding))

    def range(self, line: int, column: int, end_line: int, end_column: int) -> types.Range:
        start = self.position(line, column)
        end = self.position(end_line, end_column)
        if (end.line, end.character) < (start.line, start.character):
            end = start
        return types.Range(start, end)

    def whole_line(self, line: int) -> types.Range:
        """The 1-based `line` from its first to its last character."""
        return self.range(line, 1, line, len(self.line(line - 1)) + 1)

    def column(self, position: types.Position) -> int:
        """The 0-based code-point column of an LSP position (the inverse of `position`)."""
        text = self.line(position.line)
        if self.encoding == UTF32 or text.isascii():
            return min(position.character, len(text))
        units = 0
        for index, char in enumerate(text):
            if units >= position.character:
                return index
            units += _units(char, self.encoding)
        return len(text)


def edit_to_lsp(edit: Edit, lines: Lines) -> types.TextEdit:
    return types.TextEdit(lines.range(edit.line, edit.column, edit.end_line, edit.end_column), edit.text)


def fix_to_data(fix: Fix, lines: Lines) -> dict[str, Any]:
    """A fix as plain JSON for `Diagnostic.data`, with its edits already in the client's positions."""
    return {
        "title": fix.title,
        "applicability": fix.applicability.value,
        "edits": [
            {"range": _range_json(e.range), "newText": e.new_text} for e in (edit_to_lsp(x, lines) for x in fix.edits)
        ],
    }


def _range_json(r: types.Range) -> dict[str, Any]:
    return {"start": {"line": r.start.line, "character": r.start.character},
            "end": {"line": r.end.line, "character": r.end.character}}


def range_from_json(value: Any) -> types.Range:
    """An LSP range from its JSON form; raises ValueError when `value` is not one."""
    try:
        start, end = value["start"], value["end"]
        return types.Range(types.Position(int(start["line"]), int(start["character"])),
                           types.Position(int(end["line"]), int(end["character"])))
    except (KeyError, TypeError) as exc:
        raise ValueError(f"not a range: {value!r}") from exc


def severity_of(finding_severity: Severity | str, override: str | None = None) -> types.DiagnosticSeverity:
    value = override or str(getattr(finding_severity, "value", finding_severity))
    return LSP_SEVERITY.get(value, types.DiagnosticSeverity.Warning)


def finding_to_diagnostic(
    finding: Finding,
    lines: Lines,
    *,
    version: int | None,
    severity: str | None = None,
    href: str | None = None,
    noqa: types.TextEdit | None = None,
) -> types.Diagnostic:
    """One `rootrank check` finding as an LSP diagnostic carrying its fixes (and its noqa edit) in `data`."""
    data: dict[str, Any] = {
        "rule": finding.rule,
        "version": version,
        "fixes": [fix_to_data(f, lines) for f in finding.ordered_fixes],  # the engine's preferred fix first
    }
    if noqa is not None:
        data["noqa"] = {"range": _range_json(noqa.range), "newText": noqa.new_text}
    return types.Diagnostic(
        range=lines.range(finding.line, finding.column, finding.end_line, finding.end_column),
        message=finding.message,
        severity=severity_of(finding.severity, severity),
        code=finding.rule,
        code_description=types.CodeDescription(href=href) if href else None,
        source="rootrank",
        data=data,
    )
