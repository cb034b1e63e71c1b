"""Jupyter notebooks through LSP notebook document sync (as VS Code sends them): the cells checked as one
module, each cell's diagnostics on that cell, hover and quick fixes in a cell, edits re-checked."""

from __future__ import annotations

from lsprotocol import types
from pytest_lsp import LanguageClient

from tests.lsp.lsp_helpers import apply_edits, diagnostics_for, edits_of, encoding_of, wait_for

RULE = "checkpoint.use-reentrant-explicit"
CELLS = [
    (types.NotebookCellKind.Markup, "# LoRA fine-tuning"),
    (types.NotebookCellKind.Code, "!pip install torch\nimport torch\nfrom torch.utils.checkpoint import checkpoint"),
    (types.NotebookCellKind.Code, "def forward(blocks, x):\n    for block in blocks:\n        x = checkpoint(block, x)\n"
                                  "    return x"),
]


def _open(client: LanguageClient) -> tuple[str, list[str]]:
    notebook = (client.root / "train.ipynb").as_uri()  # type: ignore[attr-defined]
    cells = [f"vscode-notebook-cell:{notebook[len('file:'):]}#W{i}sZmlsZQ%3D%3D" for i in range(len(CELLS))]
    client.notebook_document_did_open(types.DidOpenNotebookDocumentParams(
        notebook_document=types.NotebookDocument(uri=notebook, notebook_type="jupyter-notebook", version=1, cells=[
            types.NotebookCell(kind=kind, document=uri) for (kind, _), uri in zip(CELLS, cells, strict=True)]),
        cell_text_documents=[types.TextDocumentItem(uri=uri, language_id="markdown" if kind == types.NotebookCellKind.Markup
                                                    else "python", version=1, text=text)
                             for (kind, text), uri in zip(CELLS, cells, strict=True)]))
    return notebook, cells


async def test_diagnostics_hover_and_fix_in_a_cell(vscode: LanguageClient):
    notebook, cells = _open(vscode)
    (diagnostic,) = await diagnostics_for(vscode, cells[2], version=1, min_count=1)
    assert diagnostic.code == RULE
    assert diagnostic.range.start == types.Position(2, CELLS[2][1].splitlines()[2].index("checkpoint("))
    assert await diagnostics_for(vscode, cells[1], version=1) == []  # published, and empty

    hover = await vscode.text_document_hover_async(types.HoverParams(
        text_document=types.TextDocumentIdentifier(uri=cells[2]), position=types.Position(2, 13)))
    assert hover is not None and "Reentrant" in hover.contents.value  # type: ignore[union-attr]

    actions = await vscode.text_document_code_action_async(types.CodeActionParams(
        text_document=types.TextDocumentIdentifier(uri=cells[2]), range=diagnostic.range,
        context=types.CodeActionContext(diagnostics=[diagnostic])))
    preferred = next(a for a in actions or [] if isinstance(a, types.CodeAction) and a.is_preferred)
    fixed = apply_edits(CELLS[2][1], edits_of(preferred, cells[2]), encoding_of(vscode))
    assert "checkpoint(block, x, use_reentrant=True)" in fixed

    vscode.notebook_document_did_change(types.DidChangeNotebookDocumentParams(
        notebook_document=types.VersionedNotebookDocumentIdentifier(uri=notebook, version=2),
        change=types.NotebookDocumentChangeEvent(cells=types.NotebookDocumentCellChanges(text_content=[
            types.NotebookDocumentCellContentChanges(
                document=types.VersionedTextDocumentIdentifier(uri=cells[2], version=2),
                changes=[types.TextDocumentContentChangeWholeDocument(text=fixed)])]))))
    assert await diagnostics_for(vscode, cells[2], version=2) == []

    vscode.notebook_document_did_close(types.DidCloseNotebookDocumentParams(
        notebook_document=types.NotebookDocumentIdentifier(uri=notebook),
        cell_text_documents=[types.TextDocumentIdentifier(uri=u) for u in cells]))
    await wait_for(lambda: any(p.uri == cells[2] and p.version is None and not p.diagnostics
                               for p in vscode.published), what="cleared diagnostics")  # type: ignore[attr-defined]
