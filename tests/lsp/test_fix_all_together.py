"""`source.fixAll.rootrank` proves its fixes together (issue #22): through the real server with two test rules
(patched_server.py `conflicting_rules`) whose safe fixes each hold alone and fail beside the real
`checkpoint.use-reentrant-explicit` fix, one by passing `use_reentrant` twice (a SyntaxError only in
combination, on edits that do not overlap), one by leaving its finding in place. The code is generated:
many calls, formatted several ways, and a non-ASCII line before each fix point (positions in UTF-16)."""

from __future__ import annotations

import ast
import os
from pathlib import Path

import pytest_lsp
from lsprotocol import types
from pytest_lsp import ClientServerConfig, LanguageClient

from tests.lsp.conftest import PATCHED_SERVER, initialize_params, make_client, make_workspace
from tests.lsp.lsp_helpers import apply_edits, change_document, diagnostics_for, edits_of, open_document
from tests.lsp.patched_server import INEFFECTIVE, PINS
from tests.trust.test_fix_together import generated

REAL = "checkpoint.use-reentrant-explicit"


@pytest_lsp.fixture(config=ClientServerConfig(
    server_command=PATCHED_SERVER, client_factory=make_client,
    server_env={**os.environ, "ROOTRANK_TEST_CONFLICTING_FIXES": "1"}))
async def conflicting(lsp_client: LanguageClient, tmp_path: Path):
    lsp_client.root = make_workspace(tmp_path)  # type: ignore[attr-defined]
    await lsp_client.initialize_session(initialize_params("visual-studio-code", lsp_client.root))  # type: ignore[attr-defined]
    yield
    await lsp_client.shutdown_session()


async def _fix_all(client: LanguageClient, uri: str) -> list[types.TextEdit]:
    actions = await client.text_document_code_action_async(types.CodeActionParams(
        types.TextDocumentIdentifier(uri), types.Range(types.Position(0, 0), types.Position(0, 0)),
        types.CodeActionContext(diagnostics=[], only=[types.CodeActionKind.SourceFixAll])))
    found = [a for a in actions or [] if isinstance(a, types.CodeAction) and a.kind == "source.fixAll.rootrank"]
    return edits_of(found[0], uri) if found else []


async def test_fix_all_keeps_only_the_fixes_that_hold_together(conflicting: LanguageClient):
    client = conflicting
    source = generated(3, 12).replace("  # call", "  # é😀 call")
    calls = source.count("checkpoint(")
    uri = open_document(client, "train.py", source)
    diagnostics = await diagnostics_for(client, uri, version=1, min_count=calls)
    codes = [d.code for d in diagnostics]
    assert codes.count(REAL) == calls and codes.count(INEFFECTIVE) == calls and codes.count(PINS) > 0, codes
    # what fix-all did before: every diagnostic's safe fix, none overlapping, is a file that does not compile
    naive: list[types.TextEdit] = []
    for diagnostic in diagnostics:
        safe = [f for f in diagnostic.data["fixes"] if f["applicability"] == "safe"]
        naive += [types.TextEdit(types.Range(types.Position(**e["range"]["start"]), types.Position(**e["range"]["end"])),
                                 e["newText"]) for e in safe[0]["edits"]] if safe else []
    try:
        compile(apply_edits(source, naive), "train.py", "exec")
        raise AssertionError("the premise: the fixes all together do not compile")
    except SyntaxError:
        pass

    edits = await _fix_all(client, uri)
    assert edits == await _fix_all(client, uri)  # the same answer for the same version (kept, not recomputed)
    fixed = apply_edits(source, edits)
    compile(fixed, "train.py", "exec")
    tree = ast.parse(fixed)
    keywords = [k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "checkpoint"
                for k in n.keywords]
    assert keywords == ["use_reentrant"] * calls and fixed.count("use_reentrant=True") == calls
    assert fixed.count("(") == source.count("(")  # the fix that fixes nothing is left out
    change_document(client, uri, 2, fixed)
    after = [d.code for d in await diagnostics_for(client, uri, version=2)]
    assert REAL not in after and PINS not in after and after.count(INEFFECTIVE) == calls, after
    assert await _fix_all(client, uri) == []  # nothing left that holds
