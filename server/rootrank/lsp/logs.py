"""Training logs opened in the editor: the diagnosis as diagnostics, and hovers with the fix.

An Error marks the initiating failure ("initiating failure: rank 3, CUDA out of memory"), Information
marks each collateral failure with `relatedInformation` pointing back at the initiating line, Hints mark
the other entries seen. The diagnosis runs in a worker thread; long logs report `$/progress` and can be
cancelled from the client; a result for a text that has changed meanwhile is dropped, never published.
"""

from __future__ import annotations

import asyncio
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types

from rootrank.lsp import engine
from rootrank.lsp.convert import LSP_SEVERITY, Lines, encoding_name

if TYPE_CHECKING:
    from rootrank.diagnose.live import GrowingText
    from rootrank.lsp.core import RootrankServer
    from rootrank.lsp.state import DocumentState
    from rootrank.model import Diagnosis, RootCause

KIND = "log"


def _rank(rank: int | None) -> str:
    return f"rank {rank}" if rank is not None else "unknown rank"


def initiating_message(root: RootCause) -> str:
    """"initiating failure: rank 3, CUDA out of memory"; no rank for a one-process log; "likely cause" when
    what started it is a warning rather than a failure."""
    head = "initiating failure" if root.severity.value == "error" else "likely cause"
    return f"{head}: rank {root.rank}, {root.title}" if root.rank is not None else f"{head}: {root.title}"


def _docs(rule: str) -> types.CodeDescription | None:
    href = engine.docs_uri(rule)
    return types.CodeDescription(href=href) if href else None


def to_diagnostics(diagnosis: Diagnosis, lines: Lines, uri: str) -> list[types.Diagnostic]:
    """The diagnosis of one log as diagnostics on that log's lines."""
    out: list[types.Diagnostic] = []
    covered: set[int] = set()
    root = diagnosis.root_cause
    root_location: types.Location | None = None
    if root is not None:
        root_range = lines.whole_line(root.line)
        root_location = types.Location(uri, root_range)
        evidence = [
            types.DiagnosticRelatedInformation(types.Location(uri, lines.whole_line(e.line)),
                                               f"evidence ({_rank(e.rank)})")
            for e in root.evidence if e.line != root.line and 0 < e.line <= len(lines)
        ]
        out.append(types.Diagnostic(
            range=root_range,
            message=initiating_message(root),
            severity=LSP_SEVERITY.get(root.severity.value, types.DiagnosticSeverity.Error),
            code=root.rule,
            code_description=_docs(root.rule),
            source="rootrank",
            related_information=evidence or None,
            data={"kind": "initiating", "rule": root.rule, "rank": root.rank},
        ))
        covered.add(root.line)
    for item in diagnosis.collateral:
        if item.line in covered or not 0 < item.line <= len(lines):
            continue
        covered.add(item.line)
        title = item.title or engine.title_of(item.rule)
        related = None
        if root_location is not None and root is not None:
            related = [types.DiagnosticRelatedInformation(root_location, initiating_message(root))]
        out.append(types.Diagnostic(
            range=lines.whole_line(item.line),
            message=f"collateral: {_rank(item.rank)}, {title}"
            + (f" (after the failure on {_rank(root.rank)})" if root is not None else ""),
            severity=types.DiagnosticSeverity.Information,
            code=item.rule,
            code_description=_docs(item.rule),
            source="rootrank",
            related_information=related,
            data={"kind": "collateral", "rule": item.rule, "rank": item.rank},
        ))
    for finding in diagnosis.findings:
        if finding.line in covered or not 0 < finding.line <= len(lines):
            continue
        covered.add(finding.line)
        ranks = finding.ranks.text()
        out.append(types.Diagnostic(
            range=lines.whole_line(finding.line),
            message=f"{finding.title}" + (f" (x{finding.count})" if finding.count > 1 else "")
            + (f", ranks {ranks}" if ranks else ""),
            severity=types.DiagnosticSeverity.Hint,
            code=finding.rule,
            code_description=_docs(finding.rule),
            source="rootrank",
            data={"kind": "seen", "rule": finding.rule, "rank": finding.rank},
        ))
    return out


def compute(
    text: str,
    path: str,
    uri: str,
    encoding: str,
    cancel: threading.Event | None = None,
    on_progress: Callable[[int, int], None] | None = None,
    growing: GrowingText | None = None,
) -> tuple[Diagnosis, list[types.Diagnostic]]:
    """Runs in a worker thread; raises engine.DiagnosisCancelledError soon after `cancel` is set.

    A log that only grew since the last run (a file still being written, reloaded) is diagnosed by the
    live engine from the lines added (`growing`); any other text in full, and `growing` starts over
    from it in its own thread."""
    diagnosis = growing.diagnose(text) if growing is not None and growing.extends(text) else None
    if diagnosis is None:
        diagnosis = engine.diagnose_text(text, source=path, cancel=cancel, on_progress=on_progress)
        if growing is not None:
            growing.feed(text)
    return diagnosis, to_diagnostics(diagnosis, Lines(text, encoding), uri)


class _Progress:
    """$/progress for one diagnosis: begin (cancellable), percentage reports, end."""

    def __init__(self, ls: RootrankServer, token: str) -> None:
        self.ls, self.token, self.last = ls, token, -1

    def report(self, done: int, total: int) -> None:  # on the event loop
        percentage = int(100 * done / max(total, 1))
        if percentage >= self.last + 5:
            self.last = percentage
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=f"{done // 1024} of {total // 1024} KiB", percentage=percentage))

    def end(self, message: str) -> None:
        self.ls.work_done_progress.end(self.token, types.WorkDoneProgressEnd(message=message))
        self.ls.work_done_progress.tokens.pop(self.token, None)


async def run(ls: RootrankServer, state: DocumentState) -> None:
    document = ls.document(state.uri)
    if document is None:
        return
    text, version, generation = document.source, document.version, state.generation
    encoding = encoding_name(ls.workspace.position_encoding)
    loop = asyncio.get_running_loop()
    line_count = text.count("\n") + 1
    progress: _Progress | None = None
    if line_count >= ls.settings.progress_lines and ls.client_supports("window", "work_done_progress"):
        progress = await _begin_progress(ls, line_count)
    cancel = threading.Event()

    def on_progress(done: int, total: int) -> None:  # in the worker thread
        if progress is not None:
            loop.call_soon_threadsafe(progress.report, done, total)

    if state.growing is None:
        state.growing = engine.growing_text(document.path or state.uri)
    work = loop.run_in_executor(ls.log_executor, compute, text, document.path or state.uri, state.uri, encoding,
                                cancel, on_progress, state.growing)
    outcome = "done"
    try:
        if progress is not None:
            cancelled = asyncio.wrap_future(ls.work_done_progress.tokens[progress.token])
            await asyncio.wait({work, cancelled}, return_when=asyncio.FIRST_COMPLETED)
            if not work.done():
                outcome = "cancelled"
                cancel.set()
                ls.log(f"rootrank: diagnosis of {state.uri} cancelled", types.MessageType.Info)
                return
        diagnosis, diagnostics = await work
    except asyncio.CancelledError:
        outcome = "superseded by an edit"
        cancel.set()
        ls.log(f"rootrank: dropped a stale diagnosis of {state.uri} (version {version})", types.MessageType.Log)
        raise
    except engine.DiagnosisCancelledError:
        outcome = "cancelled"
        return
    except Exception:
        outcome = "failed"
        raise
    finally:
        if progress is not None:
            progress.end(outcome)
    if not ls.is_current(state, generation, version):
        ls.log(f"rootrank: dropped a stale diagnosis of {state.uri} (version {version})", types.MessageType.Log)
        return
    state.diagnosis, state.diagnostics, state.published_version = diagnosis, diagnostics, version
    ls.publish(state.uri, version, diagnostics)


async def _begin_progress(ls: RootrankServer, line_count: int) -> _Progress | None:
    token = f"rootrank-diagnose-{uuid.uuid4().hex[:12]}"
    try:
        await asyncio.wait_for(ls.work_done_progress.create_async(token), timeout=5)
    except Exception:
        return None  # the client refused or did not answer: work without progress
    ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
        title="rootrank: diagnosing log", message=f"{line_count} lines", cancellable=True, percentage=0))
    return _Progress(ls, token)


# --------------------------------------------------------------------------- hover


def _fenced(text: str, language: str = "") -> str:
    fence = "```"
    while fence in text:
        fence += "`"
    return f"{fence}{language}\n{text.rstrip()}\n{fence}"


def root_cause_markdown(root: RootCause, heading: str) -> str:
    parts = [f"**{heading}**", ""]
    where = _rank(root.rank) + (f" on {root.host}" if root.host else "")
    parts.append(f"`{root.rule}`: {root.title} ({where}, line {root.line})")
    if root.decided_by:
        parts += ["", f"Initiating rank decided by: {root.decided_by}"]
    if root.confidence is not None:
        sure = root.confidence
        parts += ["", f"Confidence: failure {sure.failure.level} ({sure.failure.reason}); "
                      f"rank {sure.rank.level} ({sure.rank.reason})"]
    if root.why:
        parts += ["", root.why.strip()]
    if root.fix:
        parts += ["", "**Fix**", "", root.fix.strip()]
    if root.verify:
        parts += ["", "**Verify**", "", _fenced(root.verify, "sh")]
    return "\n".join(parts)


def hover(ls: RootrankServer, uri: str, position: types.Position) -> types.Hover | None:
    """The hover on a log line that carries a rootrank diagnostic."""
    state = ls.state(uri)
    document = ls.document(uri)
    if state is None or document is None or state.diagnosis is None or state.published_version != document.version:
        return None
    root = state.diagnosis.root_cause
    for diagnostic in state.diagnostics:
        if diagnostic.range.start.line != position.line:
            continue
        data: dict[str, Any] = diagnostic.data if isinstance(diagnostic.data, dict) else {}
        kind = data.get("kind")
        if kind == "initiating" and root is not None:
            value = root_cause_markdown(root, initiating_message(root))
        elif kind == "collateral" and root is not None:
            value = (f"**{diagnostic.message}**\n\nThis rank failed because another one did: fix the initiating "
                     f"failure first.\n\n" + root_cause_markdown(root, initiating_message(root)))
        else:
            value = f"**{diagnostic.message}**\n\n" + (engine.explain(str(diagnostic.code)) or "")
        return types.Hover(contents=types.MarkupContent(types.MarkupKind.Markdown, value), range=diagnostic.range)
    return None


def register(server: RootrankServer) -> None:
    server.runners[KIND] = run

    def opened(ls: RootrankServer, params: types.DidOpenTextDocumentParams) -> None:
        if ls.kind(params.text_document.uri) == KIND:
            ls.schedule(params.text_document.uri, immediate=True)

    def changed(ls: RootrankServer, params: types.DidChangeTextDocumentParams) -> None:
        if ls.kind(params.text_document.uri) == KIND:
            ls.schedule(params.text_document.uri)

    def closed(ls: RootrankServer, params: types.DidCloseTextDocumentParams) -> None:
        state = ls.state(params.text_document.uri)
        if state is not None and state.growing is not None:
            state.growing.close()
            state.growing = None

    server.on(types.TEXT_DOCUMENT_DID_OPEN, "logs", opened)
    server.on(types.TEXT_DOCUMENT_DID_CHANGE, "logs", changed)
    server.on(types.TEXT_DOCUMENT_DID_CLOSE, "logs", closed)
