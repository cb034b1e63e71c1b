"""Diagnostics in Jupyter notebooks (LSP notebook document sync): the notebook's cells checked as one
module, as `rootrank check notebook.ipynb` does, and each cell's diagnostics published on that cell.

A notebook is scheduled through its first Python cell's document (one run per notebook, whatever cell
changed); the run publishes every cell, and records per cell what hover and code actions read (the
findings and diagnostics of the version they were computed for).
"""

from __future__ import annotations

import asyncio
import json
from typing import TYPE_CHECKING
from urllib.parse import unquote

from lsprotocol import types

from rootrank.lsp import engine
from rootrank.lsp.convert import Lines, encoding_name
from rootrank.lsp.diagnostics import SKIPPED_RULES, make_diagnostic, report_crashes

if TYPE_CHECKING:
    from rootrank.check.calls import FileFacts
    from rootrank.lsp.core import RootrankServer
    from rootrank.lsp.state import DocumentState
    from rootrank.model import Finding

KIND = "cell"
SYNC = types.NotebookDocumentSyncOptions(notebook_selector=[types.NotebookDocumentFilterWithCells(
    cells=[types.NotebookCellLanguage(language="python")], notebook="jupyter-notebook")])


def is_cell(ls: RootrankServer, uri: str) -> bool:
    return ls.workspace.get_notebook_document(cell_uri=uri) is not None


def _cells(ls: RootrankServer, notebook: types.NotebookDocument) -> list[tuple[str, str | None, int | None]]:
    """(cell uri, its text when it is a code cell, its version) in notebook order."""
    out = []
    for cell in notebook.cells:
        document = ls.document(cell.document)
        code = cell.kind == types.NotebookCellKind.Code and document is not None
        out.append((cell.document, document.source if code and document is not None else None,
                    document.version if document is not None else None))
    return out


def _as_ipynb(cells: list[tuple[str, str | None, int | None]]) -> str:
    return json.dumps({"cells": [{"cell_type": "code" if text is not None else "markdown", "source": text or ""}
                                 for _, text, _ in cells]})


def cell_facts(ls: RootrankServer, uri: str) -> tuple[FileFacts | None, int]:
    """The calls of the notebook holding cell `uri`, read as one module, and how many module lines come
    before that cell (module line = cell line + offset)."""
    from rootrank.check.calls import read_file
    from rootrank.check.notebook import notebook_module, parse_notebook

    notebook = ls.workspace.get_notebook_document(cell_uri=uri)
    if notebook is None:
        return None, 0
    cells = _cells(ls, notebook)
    number = next((i for i, (cell, _, _) in enumerate(cells, start=1) if unquote(cell) == unquote(uri)), None)
    module = notebook_module(parse_notebook(_as_ipynb(cells)))
    span = next((s for s in module.cells if s.cell == number), None)
    if span is None:
        return None, 0
    return read_file(module.text), span.first_line - 1


async def run(ls: RootrankServer, state: DocumentState) -> None:
    notebook = ls.workspace.get_notebook_document(cell_uri=state.uri)
    if notebook is None:
        return
    cells = _cells(ls, notebook)
    generation, versions = state.generation, [v for _, _, v in cells]
    crashes: list[tuple[str, BaseException]] = []
    path = notebook.uri.rsplit("/", 1)[-1]
    path = path if path.lower().endswith(".ipynb") else path + ".ipynb"
    from pygls.uris import to_fs_path

    on_disk = to_fs_path(notebook.uri)
    roots = ls.workspace_roots()

    def run() -> list[Finding]:
        # The library versions of the notebook's environment (a .venv above it, the python setting, ...).
        library_versions = engine.versions_for(ls.settings.python, on_disk, roots)
        return [f for f in engine.check_isolated(_as_ipynb(cells), path, ls.settings.select, ls.settings.ignore,
                                                 lambda rule, exc: crashes.append((rule, exc)), library_versions)
                if f.rule not in SKIPPED_RULES]

    findings = await asyncio.get_running_loop().run_in_executor(ls.executor, run)
    report_crashes(ls, crashes)
    current = ls.workspace.get_notebook_document(cell_uri=state.uri)
    if state.generation != generation or current is None or [v for _, _, v in _cells(ls, current)] != versions:
        return  # edited meanwhile: a newer run is scheduled
    encoding = encoding_name(ls.workspace.position_encoding)
    by_cell: dict[int, list[Finding]] = {}
    for finding in findings:
        if finding.cell is not None:
            by_cell.setdefault(finding.cell, []).append(finding)
    for number, (uri, text, version) in enumerate(cells, start=1):
        document = ls.document(uri)
        if document is None:
            continue
        lines = Lines(text or "", encoding)
        found = by_cell.get(number, [])
        diagnostics = [make_diagnostic(f, lines, version, ls.settings.severity_for(f.rule), "python") for f in found]
        cell_state = ls.track(document)
        cell_state.findings, cell_state.diagnostics, cell_state.published_version = found, diagnostics, version
        ls.publish(uri, version, diagnostics)


def _schedule(ls: RootrankServer, notebook: types.NotebookDocument | None, immediate: bool) -> None:
    """One run per notebook, through its first Python cell (the one whose state schedules it)."""
    if notebook is None:
        return
    first = next((c.document for c in notebook.cells if ls.kind(c.document) == KIND), None)
    if first is not None:
        ls.schedule(first, immediate=immediate)


def register(server: RootrankServer) -> None:
    server.runners[KIND] = run

    def opened(ls: RootrankServer, params: types.DidOpenNotebookDocumentParams) -> None:
        _schedule(ls, ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri), True)

    def changed(ls: RootrankServer, params: types.DidChangeNotebookDocumentParams) -> None:
        if ls.settings.check_on != "save":
            _schedule(ls, ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri), False)

    def saved(ls: RootrankServer, params: types.DidSaveNotebookDocumentParams) -> None:
        _schedule(ls, ls.workspace.get_notebook_document(notebook_uri=params.notebook_document.uri), True)

    def closed(ls: RootrankServer, params: types.DidCloseNotebookDocumentParams) -> None:
        for cell in params.cell_text_documents:
            ls.forget(cell.uri)
            ls.publish(cell.uri, None, [])

    server.on(types.NOTEBOOK_DOCUMENT_DID_OPEN, "notebooks", opened)
    server.on(types.NOTEBOOK_DOCUMENT_DID_CHANGE, "notebooks", changed)
    server.on(types.NOTEBOOK_DOCUMENT_DID_SAVE, "notebooks", saved)
    server.on(types.NOTEBOOK_DOCUMENT_DID_CLOSE, "notebooks", closed)
