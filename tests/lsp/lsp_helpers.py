"""Helpers for the language-server tests: open/change documents, wait for results, apply edits."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Sequence
from typing import Any

from lsprotocol import types
from pytest_lsp import LanguageClient

TIMEOUT = 20.0

def open_document(client: LanguageClient, name: str, text: str, language_id: str = "python") -> str:
    uri = (client.root / name).as_uri()  # type: ignore[attr-defined]
    client.text_document_did_open(types.DidOpenTextDocumentParams(
        types.TextDocumentItem(uri=uri, language_id=language_id, version=1, text=text)))
    return uri


def change_document(client: LanguageClient, uri: str, version: int, text: str) -> None:
    client.text_document_did_change(types.DidChangeTextDocumentParams(
        text_document=types.VersionedTextDocumentIdentifier(uri=uri, version=version),
        content_changes=[types.TextDocumentContentChangeWholeDocument(text=text)],
    ))


async def wait_for(predicate: Callable[[], Any], timeout: float = TIMEOUT, what: str = "condition") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        await asyncio.sleep(0.02)
    raise AssertionError(f"timed out after {timeout}s waiting for {what}")


async def diagnostics_for(client: LanguageClient, uri: str, version: int | None = None,
                          min_count: int = 0) -> Sequence[types.Diagnostic]:
    """The first publication for `uri` (at `version`, when given) with at least `min_count` diagnostics."""

    def found() -> Sequence[types.Diagnostic] | None:
        for params in reversed(client.published):  # type: ignore[attr-defined]
            if params.uri == uri and (version is None or params.version == version) and \
                    len(params.diagnostics) >= min_count:
                return list(params.diagnostics) or [None]  # type: ignore[list-item]
        return None

    result = await wait_for(found, what=f"diagnostics for {uri} (version {version})")
    return [d for d in result if d is not None]


def units(text: str, encoding: str) -> int:
    """Length of `text` in the code units of a position encoding."""
    if encoding == "utf-8":
        return len(text.encode("utf-8"))
    if encoding == "utf-32":
        return len(text)
    return len(text.encode("utf-16-le")) // 2


def encoding_of(client: LanguageClient) -> str:
    """The position encoding the server chose (recorded by the fixtures), UTF-16 when none was."""
    return getattr(client, "encoding", None) or "utf-16"


def apply_edits(text: str, edits: Sequence[types.TextEdit], encoding: str = "utf-16") -> str:
    """Apply LSP edits to `text` (positions in `encoding` units), last first."""
    lines = text.split("\n")

    def offset(position: types.Position) -> int:
        line = lines[position.line] if position.line < len(lines) else ""
        column = 0
        while column < len(line) and units(line[: column + 1], encoding) <= position.character:
            column += 1
        return sum(len(x) + 1 for x in lines[: position.line]) + column

    for edit in sorted(edits, key=lambda e: (e.range.start.line, e.range.start.character), reverse=True):
        start, end = offset(edit.range.start), offset(edit.range.end)
        text = text[:start] + edit.new_text + text[end:]
    return text


def edits_of(action: types.CodeAction, uri: str) -> list[types.TextEdit]:
    assert action.edit is not None
    if action.edit.document_changes:
        out: list[types.TextEdit] = []
        for change in action.edit.document_changes:
            assert isinstance(change, types.TextDocumentEdit) and change.text_document.uri == uri
            out.extend(e for e in change.edits if isinstance(e, types.TextEdit))
        return out
    assert action.edit.changes is not None
    return list(action.edit.changes[uri])
