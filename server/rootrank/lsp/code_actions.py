"""Code actions: each diagnostic's fixes, "Ignore <id> on this line", and `source.fixAll.rootrank`.

Quick fixes come from `Diagnostic.data` as published (or, for clients that do not echo `data`, from the
diagnostics the server published for the current version); nothing is recomputed. The preferred fix is
the first safe one; unsafe fixes say "(unsafe)" in their title and are never part of fix-all;
display-only fixes are not offered as edits.

Fix-all is proven together, as `rootrank check --fix` is (check.fix_together, the same code): the safe
fixes of a file (Python or a config) are combined, the result re-checked in a worker thread, and kept
only if it compiles (as the text did) and none of the fixed findings is still reported; otherwise the
fixes are tried by halves and those that break the others are left out. The answer is kept per document
version (a lightbulb request asks for it on every cursor move). A notebook cell, a module only with its
notebook's other cells, gets its safe fixes unproven, none overlapping another.
"""

from __future__ import annotations

import asyncio
import os
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from rootrank.lsp.convert import Lines, edit_to_lsp, encoding_name, range_from_json

if TYPE_CHECKING:
    from pygls.workspace import TextDocument

    from rootrank.lsp.core import RootrankServer
    from rootrank.model import Finding

FIX_ALL = f"{types.CodeActionKind.SourceFixAll.value}.rootrank"
KINDS: list[types.CodeActionKind | str] = [types.CodeActionKind.QuickFix, types.CodeActionKind.SourceFixAll, FIX_ALL]


def _wanted(kind: str, only: list[str] | None) -> bool:
    return not only or any(kind == k or kind.startswith(f"{k}.") for k in only)


def _key(diagnostic: types.Diagnostic) -> tuple[Any, ...]:
    r = diagnostic.range
    return (str(diagnostic.code), r.start.line, r.start.character, r.end.line, r.end.character)


def _data_for(ls: RootrankServer, document: TextDocument, diagnostic: types.Diagnostic) -> dict[str, Any] | None:
    """The diagnostic's data if it belongs to the current text, else the published twin's, else None."""
    data = diagnostic.data
    if isinstance(data, dict) and data.get("version") == document.version:
        return data
    state = ls.state(document.uri)
    if state is None or state.published_version != document.version:
        return None
    key = _key(diagnostic)
    for published in state.diagnostics:
        if _key(published) == key and isinstance(published.data, dict):
            return published.data
    return None


def _edit(ls: RootrankServer, document: TextDocument, edits: list[types.TextEdit]) -> types.WorkspaceEdit:
    """A workspace edit, versioned when the client supports document changes (so a stale edit is refused)."""
    if ls.client_supports("workspace", "workspace_edit", "document_changes"):
        text_document = types.OptionalVersionedTextDocumentIdentifier(uri=document.uri, version=document.version)
        return types.WorkspaceEdit(document_changes=[types.TextDocumentEdit(text_document, list(edits))])
    return types.WorkspaceEdit(changes={document.uri: list(edits)})


def _text_edits(fix: dict[str, Any]) -> list[types.TextEdit]:
    return [types.TextEdit(range_from_json(e["range"]), str(e["newText"])) for e in fix.get("edits", ())]


def quick_fixes(
    ls: RootrankServer, document: TextDocument, diagnostic: types.Diagnostic, data: dict[str, Any]
) -> list[types.CodeAction]:
    actions: list[types.CodeAction] = []
    # The engine lists its preferred fix first (check/fixes.preferred: the first safe fix, else the first
    # unsafe one); every output names the same one. A display-only fix is never preferred.
    fixes = data.get("fixes", ())
    preferred = 0 if fixes and fixes[0].get("applicability") in ("safe", "unsafe") and fixes[0].get("edits") else None
    for index, fix in enumerate(data.get("fixes", ())):
        applicability = fix.get("applicability")
        if applicability == "display-only" or not fix.get("edits"):
            continue
        title = str(fix["title"])
        if applicability != "safe" and "unsafe" not in title.lower():
            title += " (unsafe)"
        actions.append(types.CodeAction(
            title=title,
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_edit(ls, document, _text_edits(fix)),
            is_preferred=True if index == preferred else None,
        ))
    noqa = data.get("noqa")
    if isinstance(noqa, dict):
        edit = types.TextEdit(range_from_json(noqa["range"]), str(noqa["newText"]))
        actions.append(types.CodeAction(
            title=f"Ignore {data.get('rule', diagnostic.code)} on this line",
            kind=types.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            edit=_edit(ls, document, [edit]),
        ))
    return actions


def fix_all_edits(ls: RootrankServer, document: TextDocument) -> list[types.TextEdit]:
    """The safe fixes of every current diagnostic, whole fixes only, none overlapping an earlier one
    (unproven: for notebook cells, see the module docstring)."""
    state = ls.state(document.uri)
    if state is None or state.published_version != document.version:
        return []
    taken: list[tuple[tuple[int, int], tuple[int, int]]] = []
    out: list[types.TextEdit] = []
    for diagnostic in state.diagnostics:
        data = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        safe = [f for f in data.get("fixes", ()) if f.get("applicability") == "safe" and f.get("edits")]
        if not safe:
            continue
        edits = _text_edits(safe[0])
        spans = [((e.range.start.line, e.range.start.character), (e.range.end.line, e.range.end.character))
                 for e in edits]
        if any((a < d and c < b) or a == c for a, b in spans for c, d in taken):
            continue  # overlaps a fix already taken: the next fix-all (after a re-check) gets it
        taken.extend(spans)
        out.extend(edits)
    return out


def proven_fix_all(text: str, path: str, findings: list[Finding], ls: RootrankServer,
                   encoding: str) -> list[types.TextEdit]:
    """The safe fixes of `findings` that hold together in `text` (check.fix_together), as edits in the
    client's positions; runs in a worker thread. The re-check is the one diagnostics run (same settings,
    same library versions), so "still reported" means what the user would see."""
    from rootrank.check import fix_together
    from rootrank.check.fixes import choose, plan_fixes
    from rootrank.lsp import engine
    from rootrank.lsp.diagnostics import SKIPPED_RULES

    settings = ls.settings
    versions = engine.versions_for(settings.python, path if os.path.isabs(path) else None, ls.workspace_roots())

    def recheck(fixed: str) -> list[Finding]:
        found = engine.check_isolated(fixed, path, settings.select, settings.ignore, lambda rule, exc: None, versions)
        return [f for f in found if f.rule not in SKIPPED_RULES]

    candidates = [f for f in findings if choose(f, unsafe=False) is not None]
    if not candidates:
        return []
    _, fixed, _ = fix_together(text, path, candidates, recheck)
    lines = Lines(text, encoding)
    return [edit_to_lsp(edit, lines) for edit in plan_fixes(text, fixed).edits]


async def fix_all(ls: RootrankServer, document: TextDocument) -> list[types.TextEdit]:
    """The edits of `source.fixAll.rootrank` for the document's current version (see the module docstring)."""
    from rootrank.lsp.diagnostics import KIND, check_path

    state = ls.state(document.uri)
    if state is None or state.published_version != document.version:
        return []
    if state.kind != KIND:
        return fix_all_edits(ls, document)
    version, published = document.version, state.diagnostics
    # Kept for this version's published findings (a settings change re-publishes the same version).
    if state.fix_all is not None and state.fix_all[0] == version and state.fix_all[1] is published:
        return state.fix_all[2]
    path = check_path(state.uri, document.path, document.language_id)
    encoding = encoding_name(ls.workspace.position_encoding)
    edits = await asyncio.get_running_loop().run_in_executor(
        ls.executor, proven_fix_all, document.source, path, list(state.findings), ls, encoding)
    if ls.document(document.uri) is not document or document.version != version:
        return []  # the text changed meanwhile: these edits belong to an older version
    state.fix_all = (version, published, edits)
    return edits


async def code_action(ls: RootrankServer, params: types.CodeActionParams) -> list[types.CodeAction] | None:
    document = ls.document(params.text_document.uri)
    if document is None:
        return None
    only = [str(k) for k in params.context.only] if params.context.only else None
    actions: list[types.CodeAction] = []
    if _wanted(types.CodeActionKind.QuickFix.value, only):
        for diagnostic in params.context.diagnostics:
            if diagnostic.source != "rootrank":
                continue
            data = _data_for(ls, document, diagnostic)
            if data is not None:
                actions.extend(quick_fixes(ls, document, diagnostic, data))
    if _wanted(FIX_ALL, only):
        edits = await fix_all(ls, document)
        if edits:
            actions.append(types.CodeAction(
                title="rootrank: fix all (safe fixes)", kind=FIX_ALL, edit=_edit(ls, document, edits)))
    return actions


def register(server: RootrankServer) -> None:
    server.feature(types.TEXT_DOCUMENT_CODE_ACTION, types.CodeActionOptions(code_action_kinds=KINDS))(code_action)
