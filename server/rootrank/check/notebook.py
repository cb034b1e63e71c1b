"""Jupyter notebooks for `rootrank check`: the code cells read as one module in cell order, findings and
fixes mapped back to (cell, line), and fixes written back into the cells.

Lines IPython runs but Python cannot parse (`%magic`, `!shell`, `obj?`, `x = !ls`) become `pass` with
the same indentation, so every other line keeps its number; a cell that starts with a cell magic
(`%%bash`, `%%writefile`) is not Python and is left out. Cells are numbered as Jupyter shows them: all
cells, markdown included, from 1.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass
from typing import Any

from rootrank.model import Edit, Finding, Fix

# `%magic`, `!shell`, `?obj`, `obj?`, `x = !ls` / `x = %sx ls` (anchored, each repeat over its own set: linear)
_IPYTHON_ONLY = re.compile(r"^\s*(?:[%!]|\?|[\w.\[\]]+\s*\?\??\s*$)|^[\w.,\s]+=\s*[%!]")


@dataclass(frozen=True, slots=True)
class CellSpan:
    """Where one code cell sits in the module: cell number (1-based), first module line, line count."""

    cell: int
    first_line: int
    lines: int


@dataclass(frozen=True, slots=True)
class NotebookModule:
    text: str  # the code cells joined in order, IPython-only lines replaced
    cells: tuple[CellSpan, ...]

    def locate(self, line: int) -> tuple[int, int] | None:
        """(cell, line in cell) of a module line; None for the separator lines between cells."""
        for span in self.cells:
            if span.first_line <= line < span.first_line + span.lines:
                return span.cell, line - span.first_line + 1
        return None


class NotebookError(ValueError):
    """Not a notebook rootrank can read (not JSON, or no `cells` list)."""


def parse_notebook(text: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except ValueError as error:
        raise NotebookError(f"not a notebook: invalid JSON ({error})") from None
    if not isinstance(data, dict) or not isinstance(data.get("cells"), list):
        raise NotebookError("not a notebook: no 'cells' list")
    return data


def cell_source(cell: Any) -> str | None:
    """A code cell's text, or None for any other cell."""
    if not isinstance(cell, dict) or cell.get("cell_type") != "code":
        return None
    source = cell.get("source", "")
    if isinstance(source, list):
        return "".join(str(part) for part in source)
    return source if isinstance(source, str) else None


def notebook_module(data: dict[str, Any], skip: Collection[int] = ()) -> NotebookModule:
    """The code cells (but those numbered in `skip`) as one module."""
    pieces: list[str] = []
    spans: list[CellSpan] = []
    line = 1
    for number, cell in enumerate(data["cells"], start=1):
        source = cell_source(cell)
        if source is None or source.lstrip().startswith("%%"):
            continue
        lines = _python_lines(source.split("\n"))
        if number in skip:
            lines = [""] * len(lines)
        spans.append(CellSpan(number, line, len(lines)))
        pieces.append("\n".join(lines))
        line += len(lines) + 1  # a blank separator line after each cell
    return NotebookModule("\n\n".join(pieces) + "\n", tuple(spans))


def _python_lines(lines: list[str]) -> list[str]:
    """IPython-only lines (and the lines a trailing backslash continues them onto) -> `pass`."""
    out: list[str] = []
    continued = False
    for text in lines:
        if continued or _IPYTHON_ONLY.match(text):
            out.append("" if continued else text[: len(text) - len(text.lstrip())] + "pass")
            continued = text.rstrip().endswith("\\")
        else:
            out.append(text)
    return out


def to_cells(module: NotebookModule, findings: list[Finding]) -> list[Finding]:
    """Findings in module positions -> findings in (cell, line) positions; fixes whose edits leave their
    cell are dropped (a fix never spans cells)."""
    mapped: list[Finding] = []
    for finding in findings:
        start, end = module.locate(finding.line), module.locate(finding.end_line)
        if start is None:
            continue
        cell, line = start
        end_line = end[1] if end is not None and end[0] == cell else line
        fixes = tuple(f for f in (_fix_in_cell(module, fix, cell) for fix in finding.fixes) if f is not None)
        message = _LINE_REFERENCE.sub(lambda m: _cell_reference(module, int(m.group(1)), m.group(0)), finding.message)
        mapped.append(dataclasses.replace(finding, line=line, end_line=end_line, fixes=fixes, cell=cell,
                                          message=message))
    return mapped


# Messages point at other places as "line N" (rules/_common.at_line): in a notebook that is a cell's line.
_LINE_REFERENCE = re.compile(r"(?<![\w-])line (\d+)\b")


def _cell_reference(module: NotebookModule, line: int, original: str) -> str:
    where = module.locate(line)
    return original if where is None else f"cell {where[0]}, line {where[1]}"


def _fix_in_cell(module: NotebookModule, fix: Fix, cell: int) -> Fix | None:
    edits = []
    for edit in fix.edits:
        start, end = module.locate(edit.line), module.locate(edit.end_line)
        if start is None or end is None or start[0] != cell or end[0] != cell:
            return None
        edits.append(Edit(start[1], edit.column, end[1], edit.end_column, edit.text))
    return dataclasses.replace(fix, edits=tuple(edits))


def apply_to_cells(text: str, findings: list[Finding], apply: Callable[[str, list[Finding]], str]) -> str:
    """The notebook's JSON with each cell's fixes applied (`apply(cell_source, cell_findings)`), in the
    layout Jupyter writes (one-space indent, a list of lines per source)."""
    data = parse_notebook(text)
    by_cell: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.cell is not None:
            by_cell.setdefault(finding.cell, []).append(finding)
    changed = False
    for number, cell_findings in by_cell.items():
        cell = data["cells"][number - 1]
        source = cell_source(cell)
        if source is None:
            continue
        fixed = apply(source, cell_findings)
        if fixed != source:
            was_list = isinstance(cell.get("source"), list)
            cell["source"] = fixed.splitlines(keepends=True) if was_list else fixed
            changed = True
    if not changed:
        return text
    indent = _indent_of(text)
    return json.dumps(data, indent=indent, ensure_ascii=False) + ("\n" if text.endswith("\n") else "")


def _indent_of(text: str) -> int | None:
    match = re.search(r"\n( +)\"", text)
    return len(match.group(1)) if match else None
