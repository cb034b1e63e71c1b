"""Hover: what a checkpoint-related call does here, and the entry's docs for a diagnostic.

On every checkpoint-related call, with or without a finding, the explanation of check/explain_call.py (reentrant or
not, with the workspace's torch, the interacting features, the trade-off, the coverage). On a diagnostic
or a `# noqa: <id>`: `rootrank explain <id>`. On a log line with a diagnosis: the fix and the verify
command (logs.py).
"""

from __future__ import annotations

import re
from collections import OrderedDict
from typing import TYPE_CHECKING

from lsprotocol import types
from pygls.uris import to_fs_path

from rootrank.lsp import engine, logs, notebooks
from rootrank.lsp.convert import Lines, encoding_name

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from rootrank.check.calls import FileFacts
    from rootrank.lsp.core import RootrankServer

# check.calls, check.explain_call and environment are imported on the first hover, not at start-up.

_FACTS: OrderedDict[tuple[str, int | None], FileFacts | None] = OrderedDict()


def _facts(document: TextDocument) -> FileFacts | None:
    from rootrank.check.calls import read_file

    key = (document.uri, document.version)
    if key not in _FACTS:
        _FACTS[key] = read_file(document.source)
        while len(_FACTS) > 8:
            _FACTS.popitem(last=False)
    return _FACTS[key]


def _roots(ls: RootrankServer) -> tuple[str, ...]:
    roots = []
    for folder in ls.workspace.folders.values():
        path = to_fs_path(folder.uri)
        if path:
            roots.append(path)
    if ls.workspace.root_path:
        roots.append(ls.workspace.root_path)
    return tuple(dict.fromkeys(roots))


# --------------------------------------------------------------------------- handler


def _diagnostic_markdown(diagnostic: types.Diagnostic) -> str:
    code = str(diagnostic.code) if diagnostic.code is not None else ""
    text = engine.explain(code) if code else None
    head = f"**rootrank `{code}`**: {diagnostic.message}"
    return f"{head}\n\n{text.strip()}" if text else head


def _noqa_section(lines: Lines, position: types.Position) -> tuple[str, types.Range] | None:
    """`rootrank explain <id>` for the id under the cursor in a `# noqa: a, b` comment."""
    from rootrank.lsp.noqa import NOQA

    text = lines.line(position.line)
    match = NOQA.search(text)
    column = lines.column(position)
    if match is None or not match.group("codes") or not match.start("codes") <= column <= match.end("codes"):
        return None
    for code in re.finditer(r"[\w.\-]+", match.group("codes")):
        first, last = match.start("codes") + code.start(), match.start("codes") + code.end()
        if first <= column <= last:
            markdown = engine.explain(code.group())
            if markdown is None:
                return None
            return (f"**rootrank `{code.group()}`** (silenced on this line)\n\n{markdown.strip()}",
                    lines.range(position.line + 1, first + 1, position.line + 1, last + 1))
    return None


def hover(ls: RootrankServer, params: types.HoverParams) -> types.Hover | None:
    uri, position = params.text_document.uri, params.position
    document = ls.document(uri)
    if document is None:
        return None
    kind = ls.kind(uri)
    if kind == "log":
        return logs.hover(ls, uri, position)
    if kind not in ("code", "cell"):  # a notebook cell is Python
        return None
    sections: list[str] = []
    hover_range: types.Range | None = None
    lines: Lines | None = None
    if document.uri.lower().endswith((".py", ".pyi")) or document.language_id == "python":
        # In a notebook cell, the calls are read in the notebook's module (the imports sit in other cells).
        facts, offset = notebooks.cell_facts(ls, uri) if kind == "cell" else (_facts(document), 0)
        if facts is not None:
            lines = Lines(document.source, encoding_name(ls.workspace.position_encoding))
            column = lines.column(position)
            call = facts.at(position.line + 1 + offset, column)
            if call is not None:
                from rootrank.environment import find_environment

                env = find_environment(ls.settings.python, _roots(ls))
                from rootrank.check.explain_call import call_markdown

                sections.append(call_markdown(call, facts, env))
                hover_range = lines.range(call.line - offset, call.column + 1, call.end_line - offset,
                                          call.end_column + 1)
    lines = lines or Lines(document.source, encoding_name(ls.workspace.position_encoding))
    noqa = _noqa_section(lines, position)
    if noqa is not None:
        sections.append(noqa[0])
        hover_range = hover_range or noqa[1]
    state = ls.state(uri)
    if state is not None and state.published_version == document.version:
        for diagnostic in state.diagnostics:
            r = diagnostic.range
            if (r.start.line, r.start.character) <= (position.line, position.character) <= (r.end.line,
                                                                                             r.end.character):
                sections.append(_diagnostic_markdown(diagnostic))
                hover_range = hover_range or r
    if not sections:
        return None
    return types.Hover(contents=_markup(ls, "\n\n---\n\n".join(sections)), range=hover_range)


def _markup(ls: RootrankServer, markdown: str) -> types.MarkupContent:
    formats = getattr(getattr(ls.client_capabilities.text_document, "hover", None), "content_format", None)
    if formats and types.MarkupKind.Markdown not in formats:
        return types.MarkupContent(types.MarkupKind.PlainText, markdown)
    return types.MarkupContent(types.MarkupKind.Markdown, markdown)


def register(server: RootrankServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
