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

from rootrank.check.noqa import language_of
from rootrank.lsp import engine, logs, notebooks
from rootrank.lsp.convert import Lines, encoding_name

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from rootrank.check.calls import Call, FileFacts
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


def _roots(ls: RootrankServer, path: str | None) -> tuple[str, ...]:
    from rootrank.environment import roots_above

    return (*(roots_above(path) if path else ()), *ls.workspace_roots())


# --------------------------------------------------------------------------- handler


def _diagnostic_markdown(diagnostic: types.Diagnostic) -> str:
    code = str(diagnostic.code) if diagnostic.code is not None else ""
    text = engine.explain(code) if code else None
    head = f"**rootrank `{code}`**: {diagnostic.message}"
    return f"{head}\n\n{text.strip()}" if text else head


def _noqa_section(lines: Lines, position: types.Position, language: str = "python") -> tuple[str, types.Range] | None:
    """`rootrank explain <id>` for the id under the cursor in a `# noqa: a, b` comment."""
    from rootrank.check.noqa import NOQA, scan
    from rootrank.lsp.noqa import _text

    # Only a real comment (a tokenizer's, never noqa text inside a string) names silenced ids.
    comment = scan(_text(lines), language).by_line.get(position.line + 1)
    match = NOQA.search(comment.text) if comment is not None else None
    column = lines.column(position)
    if comment is None or match is None or not match.group("codes") \
            or not comment.column + match.start("codes") <= column <= comment.column + match.end("codes"):
        return None
    for code in re.finditer(r"[\w.\-]+", match.group("codes")):
        first = comment.column + match.start("codes") + code.start()
        last = comment.column + match.start("codes") + code.end()
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
                from rootrank.environment import NoEnvironmentError, find_environment

                roots = _roots(ls, document.path)
                try:
                    env = find_environment(ls.settings.python, roots)
                except NoEnvironmentError:  # a `python` setting with nothing behind it: the next place
                    env = find_environment("", roots)
                from rootrank.check.explain_call import call_markdown

                sections.append(call_markdown(call, facts, env))
                measured = _measured_markdown(document, call)
                if measured:
                    sections.append(measured)
                hover_range = lines.range(call.line - offset, call.column + 1, call.end_line - offset,
                                          call.end_column + 1)
    lines = lines or Lines(document.source, encoding_name(ls.workspace.position_encoding))
    language = language_of(document.uri.split("?", 1)[0]) if document.language_id != "python" else "python"
    noqa = _noqa_section(lines, position, language) if language is not None else None
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


_MEASURED_KINDS = {"checkpoint": "checkpoint", "checkpoint_sequential": "checkpoint",
                   "gradient_checkpointing_enable": "hf", "checkpoint_wrapper": "wrapper",
                   "apply_activation_checkpointing": "wrapper"}


def _measured_markdown(document: TextDocument, call: Call) -> str | None:
    """The last `rootrank.measure` numbers for the blocks a checkpointing call covers, when there are some."""
    from rootrank.lsp.measure import last_measurement

    kind = _MEASURED_KINDS.get(call.name)
    path = to_fs_path(document.uri)
    m = last_measurement(path) if kind else None
    if m is None or kind is None or not path:
        return None
    from rootrank.measure.render import call_markdown as measured

    return measured(m, path, call.line, call.end_line, kind)


def _markup(ls: RootrankServer, markdown: str) -> types.MarkupContent:
    formats = getattr(getattr(ls.client_capabilities.text_document, "hover", None), "content_format", None)
    if formats and types.MarkupKind.Markdown not in formats:
        return types.MarkupContent(types.MarkupKind.PlainText, markdown)
    return types.MarkupContent(types.MarkupKind.Markdown, markdown)


def register(server: RootrankServer) -> None:
    server.feature(types.TEXT_DOCUMENT_HOVER)(hover)
