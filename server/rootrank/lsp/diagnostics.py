"""Diagnostics for training code and configs: `rootrank check` on open, on change (debounced) and on save.

Each diagnostic carries the entry id as `code`, a link to the entry's local docs page, and in `data` its
fixes (edits already in the client's positions) and the edit that adds `# noqa: <id>` to its line, so
code actions never recompute anything. The check runs in a worker thread on a snapshot of the text; a
result is published only if the document still has that text.
"""

from __future__ import annotations

import asyncio
import os
import traceback
from collections.abc import Callable
from typing import TYPE_CHECKING

from lsprotocol import types

from rootrank.check.noqa import language_of
from rootrank.lsp import engine
from rootrank.lsp.convert import Lines, encoding_name, finding_to_diagnostic
from rootrank.lsp.noqa import noqa_edit

if TYPE_CHECKING:
    from rootrank.lsp.core import RootrankServer
    from rootrank.lsp.settings import Settings
    from rootrank.lsp.state import DocumentState
    from rootrank.model import Finding

KIND = "code"
PYTHON_SUFFIXES = (".py", ".pyi")
CONFIG_SUFFIXES = (".yaml", ".yml", ".json", ".sh")  # configs and launch scripts
CODE_LANGUAGES = {"python": ".py", "yaml": ".yaml", "json": ".json", "jsonc": ".json", "shellscript": ".sh"}
# While you type, a file often does not parse; your Python tooling reports that, not rootrank.
SKIPPED_RULES = frozenset({"syntax-error"})


def is_checked(uri: str, language_id: str | None) -> bool:
    """Python files and training configs (accelerate / DeepSpeed YAML or JSON) are checked."""
    path = uri.split("?", 1)[0].lower()
    return path.endswith(PYTHON_SUFFIXES + CONFIG_SUFFIXES) or (language_id or "") in CODE_LANGUAGES


def comment_char(path: str) -> str | None:
    """The line-comment marker a `# noqa` can use in this file, or None (JSON has no comments)."""
    return None if path.lower().endswith(".json") else "#"


def check_path(uri: str, path: str | None, language_id: str | None) -> str:
    """The path given to check_source: the file's own, or a made-up one whose suffix says what it is."""
    path = path or uri.rsplit("/", 1)[-1]
    suffix = CODE_LANGUAGES.get(language_id or "")
    if suffix and not path.lower().endswith(PYTHON_SUFFIXES + CONFIG_SUFFIXES):
        path += suffix
    return path


def compute(
    text: str,
    path: str,
    version: int | None,
    settings: Settings,
    encoding: str,
    crashes: list[tuple[str, BaseException]],
    roots: tuple[str, ...] = (),
    cancelled: Callable[[], bool] | None = None,
) -> tuple[list[Finding], list[types.Diagnostic]] | None:
    """The findings for one text and their diagnostics (runs in a worker thread); None once `cancelled()`
    says the text is stale (changed or closed), which stops the work rather than only dropping its result."""
    from rootrank.check import CheckCancelledError

    versions = engine.versions_for(settings.python, path if os.path.isabs(path) else None, roots)
    try:
        checked = engine.check_isolated(text, path, settings.select, settings.ignore,
                                        lambda rule, exc: crashes.append((rule, exc)), versions, cancelled)
    except CheckCancelledError:
        return None
    findings = [f for f in checked if f.rule not in SKIPPED_RULES]
    lines = Lines(text, encoding)
    comment = comment_char(path)
    language = language_of(path) if comment is not None else None
    diagnostics = []
    for number, finding in enumerate(findings):
        if cancelled is not None and not number % 256 and cancelled():
            return None
        diagnostics.append(make_diagnostic(finding, lines, version, settings.severity_for(finding.rule), language))
    return findings, diagnostics


# Converted diagnostics, by what they depend on: a keystroke changes one finding or a few, and the
# conversion (positions in the client's code units, fixes and the noqa edit in `data`) is a large part
# of a big file's time to diagnostics. Bounded: cleared when full.
_CONVERTED: dict[tuple[object, ...], types.Diagnostic] = {}
MAX_CONVERTED = 4096
MAX_CONVERTED_LINE_CHARS = 4096


def make_diagnostic(finding: Finding, lines: Lines, version: int | None, severity: str | None,
                    noqa: str | None) -> types.Diagnostic:
    """A finding as a diagnostic of `version`, reusing the conversion while its lines are unchanged."""
    touched = {finding.line, finding.end_line,
               *(n for fix in finding.fixes for edit in fix.edits for n in (edit.line, edit.end_line))}
    last = max(touched)
    # Positions depend on the text of the lines they fall on, or, past the end, on the last line.
    texts = tuple(lines.line(n - 1) for n in sorted(touched))
    key = (finding, lines.encoding, severity, noqa, texts,
           lines.line(len(lines) - 1) if last > len(lines) else None, len(lines) if last > len(lines) else 0)
    converted = _CONVERTED.get(key)
    if converted is None:
        edit = noqa_edit(lines, finding.line - 1, finding.rule, noqa, finding.column) if noqa else None
        converted = finding_to_diagnostic(finding, lines, version=None, severity=severity,
                                          href=engine.docs_uri(finding.rule), noqa=edit)
        if sum(map(len, texts)) <= MAX_CONVERTED_LINE_CHARS:  # a minified line is not kept
            if len(_CONVERTED) >= MAX_CONVERTED:
                _CONVERTED.clear()
            _CONVERTED[key] = converted
    data = converted.data if isinstance(converted.data, dict) else {}
    return types.Diagnostic(range=converted.range, message=converted.message, severity=converted.severity,
                            code=converted.code, code_description=converted.code_description,
                            source=converted.source, data={**data, "version": version})


def report_crashes(ls: RootrankServer, crashes: list[tuple[str, BaseException]]) -> None:
    """Rules that raised, into the client's log once each (the other rules' findings are still published)."""
    for rule, exc in crashes:
        what = "the checks" if rule == "*" else f"rule {rule}"
        detail = "".join(traceback.format_exception(exc)).rstrip()
        level = types.MessageType.Warning if rule == "*" else types.MessageType.Error
        suffix = "; re-running each rule alone" if rule == "*" else "; skipped, the other rules still ran"
        ls.log_once(f"crash:{rule}:{type(exc).__name__}:{exc}", f"rootrank: {what} raised {exc!r}{suffix}\n{detail}",
                    level)


async def run(ls: RootrankServer, state: DocumentState) -> None:
    document = ls.document(state.uri)
    if document is None:
        return
    text, version, generation = document.source, document.version, state.generation
    path = check_path(state.uri, document.path, document.language_id)
    crashes: list[tuple[str, BaseException]] = []
    encoding = encoding_name(ls.workspace.position_encoding)
    computed = await asyncio.get_running_loop().run_in_executor(
        ls.executor, compute, text, path, version, ls.settings, encoding, crashes, ls.workspace_roots(),
        lambda: state.generation != generation)  # bumped by every change and by didClose
    report_crashes(ls, crashes)
    if computed is None or not ls.is_current(state, generation, version):
        return  # the text changed meanwhile: a newer run is scheduled
    findings, diagnostics = computed
    state.findings, state.diagnostics, state.published_version = findings, diagnostics, version
    ls.publish(state.uri, version, diagnostics)


def register(server: RootrankServer) -> None:
    server.runners[KIND] = run

    def opened(ls: RootrankServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.kind(params.text_document.uri) == KIND:
            ls.schedule(params.text_document.uri, immediate=True)

    def changed(ls: RootrankServer, params: types.DidChangeTextDocumentParams) -> None:
        uri = params.text_document.uri
        if ls.kind(uri) != KIND:
            return
        if ls.settings.check_on == "save":
            state = ls.state(uri)
            if state is not None:
                state.cancel()  # published results stay until the save brings new ones
            return
        ls.schedule(uri)

    def saved(ls: RootrankServer, params: types.DidSaveTextDocumentParams) -> None:
        uri = params.text_document.uri
        state = ls.state(uri)
        document = ls.document(uri)
        if state is None or document is None or state.kind != KIND:
            return
        if ls.settings.check_on == "save" or state.published_version != document.version:
            ls.schedule(uri, immediate=True)

    server.on(types.TEXT_DOCUMENT_DID_OPEN, "diagnostics", opened)
    server.on(types.TEXT_DOCUMENT_DID_CHANGE, "diagnostics", changed)
    server.on(types.TEXT_DOCUMENT_DID_SAVE, "diagnostics", saved)
