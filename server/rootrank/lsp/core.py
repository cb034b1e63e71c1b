"""The language server's core: settings, per-document state, the scheduling of checks and the fan-out
of document notifications to the features.

Feature modules (diagnostics, logs, hover, code_actions, commands) import this core to type the server
they are handed; the core imports none of them. `server.py` assembles the two: it builds the core and
calls each feature's `register(server)`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable, Generator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO
from urllib.parse import unquote

from lsprotocol import types
from pygls.exceptions import (
    FeatureRequestError,
    JsonRpcException,
    JsonRpcInvalidParams,
    JsonRpcInvalidRequest,
)
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.protocol.language_server import lsp_method
from pygls.uris import to_fs_path
from pygls.workspace import TextDocument

from rootrank.lsp.settings import Settings, has_settings, parse_settings
from rootrank.lsp.state import DocumentState
from rootrank.lsp.transport import SKIPPED_METHOD, BoundedReader, ClientOutput, uri_problem

LOG = logging.getLogger("rootrank.lsp")

# A feature's hook for one kind of document: called with the server and the document's state.
Runner = Callable[["RootrankServer", DocumentState], Awaitable[None]]
Listener = Callable[["RootrankServer", Any], None]


def _version() -> str:
    from rootrank import __version__  # not importlib.metadata: it costs 40 ms at start-up

    return __version__


class RootrankProtocol(LanguageServerProtocol):
    """pygls' protocol, plus an answer to every request it would leave unanswered, and no traceback sent out.

    pygls drops without a word a request whose params do not parse, one that is not JSON-RPC 2.0 and any
    request after `shutdown`, which leaves the client waiting forever: these get an error response here
    (InvalidParams, InvalidRequest; the LSP asks for InvalidRequest after shutdown). A message naming a
    document by a URI no file system can hold (a NUL, control characters, unparsable) is refused before
    any feature sees it: InvalidParams for a request, dropped with a warning for a notification. A request
    too large to read (transport.BoundedReader skipped it and hands on a stand-in with its id) is refused
    with InvalidRequest. `shutdown` with requests still pending answers null (see `lsp_shutdown`).
    """

    @lsp_method(types.SHUTDOWN)
    def lsp_shutdown(self, *args: Any) -> Generator[Any, Any, None]:
        """pygls' shutdown, with its pending requests cancelled from a copy of the table: pygls 2.1.1 iterates
        over `_request_futures` itself, and each cancellation's callback removes its entry from it, so a
        shutdown that came while a diagnosis ran was answered "RuntimeError: dictionary changed size during
        iteration" (the client then kills the server: "Stopping server failed"), `_shutdown` was never set, and the
        client's answer to our own cancelled `workspace/configuration` then hit a cancelled future
        (InvalidStateError). Once `_shutdown` is set, pygls drops such late answers."""
        if (user_handler := self.fm.features.get(types.SHUTDOWN)) is not None:
            yield user_handler, args, None
        current = self.msg_id
        for msg_id, future in list(self._request_futures.items()):
            if msg_id != current and not future.done():
                future.cancel()
        self._shutdown = True
        return None

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=exc.to_response_error())
            raise

    def handle_message(self, message: Any) -> None:
        if isinstance(message, dict) or not hasattr(message, "jsonrpc"):
            # not JSON-RPC (no "jsonrpc" member, or not an object): answer what looks like a request
            if isinstance(message, dict) and isinstance(message.get("id"), (int, str)) and "method" in message:
                self._refuse(message["id"], JsonRpcInvalidRequest("not a JSON-RPC 2.0 request"))
            else:
                LOG.warning("rootrank: ignored a message that is not JSON-RPC 2.0")
            return
        method = getattr(message, "method", None)
        request = isinstance(method, str) and hasattr(message, "id")
        if request and method == SKIPPED_METHOD:
            params = getattr(message, "params", None)
            # pygls hands the params of a method it does not know as a namedtuple, not a dict
            detail = params.get("message") if isinstance(params, dict) else getattr(params, "message", None)
            self._refuse(message.id, JsonRpcInvalidRequest(f"the request is too large: {detail or 'skipped'}"))
            return
        if request and message.jsonrpc != self.VERSION:
            self._refuse(message.id, JsonRpcInvalidRequest(f"not a JSON-RPC 2.0 request: {method}"))
            return
        if request and self._shutdown and method != types.EXIT:
            self._refuse(message.id, JsonRpcInvalidRequest(f"the server is shutting down: {method} refused"))
            return
        if isinstance(method, str):
            problem = next(filter(None, map(uri_problem, _document_uris(getattr(message, "params", None)))), None)
            if problem is not None:
                if request:
                    self._refuse(message.id, JsonRpcInvalidParams(f"{method}: {problem}"))
                else:
                    LOG.warning("rootrank: ignored %s: %s", method, problem)
                return
        super().handle_message(message)

    def _refuse(self, msg_id: Any, error: JsonRpcException) -> None:
        self._send_response(msg_id, error=error.to_response_error())

    def _send_response(self, msg_id: Any, result: Any | None = None, error: Any | None = None) -> None:
        # pygls puts the server's traceback (paths, source lines) into an internal error's data; it goes to
        # our stderr (logged by pygls), not to the client
        if error is not None and isinstance(getattr(error, "data", None), dict) and "traceback" in error.data:
            error = types.ResponseError(code=error.code, message=error.message)
        super()._send_response(msg_id, result, error)


def _document_uris(params: Any) -> list[Any]:
    """The URIs of the documents a message's params name (text documents, notebooks and their cells)."""
    uris = [getattr(getattr(params, name, None), "uri", None) for name in ("text_document", "notebook_document")]
    uris += [getattr(cell, "uri", None) for cell in getattr(params, "cell_text_documents", None) or ()]
    return [uri for uri in uris if uri is not None]


class RootrankServer(LanguageServer):
    """The language server: settings, per-document state and the scheduling of checks."""

    def __init__(self, notebook_sync: types.NotebookDocumentSyncOptions | None = None) -> None:
        super().__init__("rootrank", _version(), protocol_cls=RootrankProtocol, max_workers=4,
                         notebook_document_sync=notebook_sync)
        self.settings = Settings()
        self.documents: dict[str, DocumentState] = {}
        self.runners: dict[str, Runner] = {}
        self.listeners: dict[str, list[tuple[str, Listener]]] = {}
        self.kind_of: Callable[[str, str | None], str] = lambda uri, language_id: ""
        # Our own pools (pygls' pool reads stdin): code checks are short and must never queue behind a long
        # log diagnosis, so logs and the diagnose command get their own.
        self.executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rootrank-check")
        self.log_executor = ThreadPoolExecutor(max_workers=2, thread_name_prefix="rootrank-diagnose")
        self._reported: set[str] = set()
        self.loop: asyncio.AbstractEventLoop | None = None

    def start_io(self, stdin: BinaryIO | None = None, stdout: BinaryIO | None = None) -> None:
        """Serve over stdio, reading through `transport.BoundedReader` (bounded header lines and bodies)."""

        def skipped(message: str) -> None:  # in pygls' reader thread
            LOG.warning("%s", message)
            if self.loop is not None:
                self.log(message, types.MessageType.Warning)

        super().start_io(BoundedReader(stdin or sys.stdin.buffer, skipped),  # type: ignore[arg-type]
                         ClientOutput(stdout or sys.stdout.buffer, self.client_gone))  # type: ignore[arg-type]

    def client_gone(self, reason: BaseException) -> None:
        """Our stdout was closed under us: no one can read an answer any more, so exit now, as when stdin
        ends (0 after a shutdown request, else 1). Worker threads may hold an abandoned diagnosis; the
        documents live in the editor, so nothing of the user's is lost."""
        with contextlib.suppress(OSError, ValueError):
            sys.stderr.write(f"rootrank: the client closed the connection ({type(reason).__name__}); exiting\n")
            sys.stderr.flush()
        os._exit(0 if self.protocol._shutdown else 1)

    # ------------------------------------------------------------------ client messages

    def log(self, message: str, level: types.MessageType = types.MessageType.Info) -> None:
        """window/logMessage, safe to call from any thread."""
        params = types.LogMessageParams(type=level, message=message)
        if self.loop is not None and threading.current_thread() is not threading.main_thread():
            self.loop.call_soon_threadsafe(self.window_log_message, params)
        else:
            self.window_log_message(params)

    def log_once(self, key: str, message: str, level: types.MessageType = types.MessageType.Error) -> None:
        if key not in self._reported:
            self._reported.add(key)
            self.log(message, level)

    def report_server_error(self, error: Exception, source: Any) -> None:
        # Into the client's log, not as pop-ups; a failed request has already had its error response.
        if source is FeatureRequestError:
            self.log(f"rootrank: request failed: {error}", types.MessageType.Warning)
        else:
            self.log(f"rootrank: internal error: {error}", types.MessageType.Error)

    def client_supports(self, *path: str) -> bool:
        """Whether the client declared the capability at `path` (e.g. "window", "work_done_progress")."""
        value: Any = self.client_capabilities
        for name in path:
            value = getattr(value, name, None)
            if value is None:
                return False
        return bool(value)

    # ------------------------------------------------------------------ documents

    def workspace_roots(self) -> tuple[str, ...]:
        """The workspace folders on disk (where a `.venv` of the project may sit)."""
        roots = []
        for folder in self.workspace.folders.values():
            path = to_fs_path(folder.uri)
            if path:
                roots.append(path)
        if self.workspace.root_path:
            roots.append(self.workspace.root_path)
        return tuple(dict.fromkeys(roots))

    def workspace_file(self, path: str) -> str | None:
        """`path` with its symlinks resolved when that is under a workspace folder (resolved too), else None.

        Commands read files from disk only there (and open documents from the client): a command's
        arguments come from whatever runs in the editor, and must not read `/etc/shadow` or
        `/proc/self/environ` for it."""
        try:
            real = os.path.realpath(path)
            roots = [os.path.realpath(root) for root in self.workspace_roots()]
        except (OSError, ValueError):
            return None
        for root in roots:
            if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
                return real
        return None

    def document(self, uri: str) -> TextDocument | None:
        """An open document, or None (never read from disk: the client owns unopened files). pygls keys
        its documents by the unquoted URI (`%20` -> space; a notebook cell's `%3D` -> `=`)."""
        documents = self.workspace.text_documents
        return documents.get(uri) or documents.get(unquote(uri))

    def state(self, uri: str) -> DocumentState | None:
        return self.documents.get(uri)

    def kind(self, uri: str) -> str:
        """What an open document is to rootrank: "code", "log", or "" (not ours, or not open)."""
        document = self.document(uri)
        return self.track(document).kind if document is not None else ""

    def track(self, document: TextDocument) -> DocumentState:
        kind = self.kind_of(document.uri, document.language_id)
        state = self.documents.get(document.uri)
        if state is None or state.kind != kind:
            if state is not None:
                state.cancel()
            state = self.documents[document.uri] = DocumentState(document.uri, kind)
        return state

    def schedule(self, uri: str, *, immediate: bool = False) -> None:
        """Check the document again: now after a quiet spell, else once edits pause for `debounce_ms`.

        Any scheduled or running check of an older text is abandoned (a result is only ever published
        for the text it was computed on).
        """
        document = self.document(uri)
        if document is None:
            return
        state = self.track(document)
        runner = self.runners.get(state.kind)
        if runner is None:
            return
        state.cancel()
        now = time.monotonic()
        quiet = now - state.last_change >= self.settings.debounce_ms / 1000
        state.last_change = now
        delay = 0.0 if (immediate or quiet) else self.settings.debounce_ms / 1000
        generation = state.generation
        state.timer = asyncio.get_running_loop().call_later(delay, self._start, state, runner, generation)

    def _start(self, state: DocumentState, runner: Runner, generation: int) -> None:
        state.timer = None
        if state.generation != generation:
            return
        state.task = asyncio.ensure_future(self._run(state, runner))

    async def _run(self, state: DocumentState, runner: Runner) -> None:
        try:
            await runner(self, state)
        except asyncio.CancelledError:
            pass
        except Exception as exc:
            self.log_once(f"runner:{state.kind}:{exc!r}", f"rootrank: checking {state.uri} failed:\n"
                          + "".join(traceback.format_exception(exc)), types.MessageType.Error)

    def forget(self, uri: str) -> None:
        state = self.documents.pop(uri, None)
        if state is not None:
            state.cancel()

    def is_current(self, state: DocumentState, generation: int, version: int | None) -> bool:
        """Whether a result computed for (generation, version) may still be published."""
        document = self.document(state.uri)
        return (
            self.documents.get(state.uri) is state
            and state.generation == generation
            and document is not None
            and document.version == version
        )

    def publish(self, uri: str, version: int | None, diagnostics: list[types.Diagnostic]) -> None:
        self.text_document_publish_diagnostics(
            types.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics, version=version)
        )

    # ------------------------------------------------------------------ fan-out

    def on(self, method: str, owner: str, listener: Listener) -> None:
        """Add `listener` for a document notification; each runs isolated from the others."""
        self.listeners.setdefault(method, []).append((owner, listener))

    def dispatch(self, method: str, params: Any) -> None:
        for owner, listener in self.listeners.get(method, ()):
            try:
                listener(self, params)
            except Exception as exc:
                self.log(f"rootrank: {owner} failed on {method}: {exc!r}\n{traceback.format_exc()}",
                         types.MessageType.Error)

    async def pull_settings(self) -> None:
        """Ask for the `rootrank` section (workspace/configuration) when the client supports it."""
        if not self.client_supports("workspace", "configuration"):
            return
        try:
            result = await asyncio.wait_for(self.workspace_configuration_async(types.ConfigurationParams(
                items=[types.ConfigurationItem(section="rootrank")])), timeout=10)
        except Exception as exc:  # a client that fails this request still gets a working server
            self.log(f"rootrank: could not read the client's settings: {exc!r}", types.MessageType.Warning)
            return
        if result and has_settings(result[0]):
            self.apply_settings(result[0])

    def apply_settings(self, raw: Any, *, base: Settings | None = None) -> None:
        settings, problems = parse_settings(raw, base if base is not None else self.settings)
        for problem in problems:
            self.log(f"rootrank: {problem}", types.MessageType.Warning)
        changed = settings != self.settings
        self.settings = settings
        if not changed:
            return
        published = {uri for uri, state in self.documents.items() if state.published_version is not None}
        for uri in list(self.documents):
            self.forget(uri)
        for uri in list(self.workspace.text_documents):
            if self.kind(uri):
                self.schedule(uri, immediate=True)
            elif uri in published:
                self.publish(uri, None, [])  # no longer ours (e.g. the log patterns changed)
