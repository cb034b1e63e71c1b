"""`rootrank lsp`: the language server (pygls 2, stdio).

The server is a small core plus feature modules, each with a `register(server)` function:
diagnostics (code and configs), logs (training logs), hover, code_actions, commands. The core owns the
per-document state and the scheduling, fans document notifications out to the features (a feature that
raises is logged to the client and the others still run), forwards rootrank's warnings to the client's
log, and exits when the client goes away.
"""

from __future__ import annotations

import asyncio
import contextlib
import gc
import logging
import os
import sys
import threading
import time
import traceback
from collections.abc import Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from lsprotocol import types
from pygls.exceptions import FeatureRequestError, JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import LanguageServerProtocol
from pygls.workspace import TextDocument

from rootrank.lsp.settings import Settings, has_settings, parse_settings
from rootrank.lsp.state import DocumentState

LOG = logging.getLogger("rootrank.lsp")

# A feature's hook for one kind of document: called with the server and the document's state.
Runner = Callable[["RootrankServer", DocumentState], Awaitable[None]]
Listener = Callable[["RootrankServer", Any], None]


def _version() -> str:
    from rootrank import __version__  # not importlib.metadata: it costs 40 ms at start-up

    return __version__


class RootrankProtocol(LanguageServerProtocol):
    """pygls' protocol, plus an error response for a request whose params do not parse.

    pygls drops such a request without answering, which leaves the client waiting forever.
    """

    def structure_message(self, data: dict[str, Any]) -> Any:
        try:
            return super().structure_message(data)
        except JsonRpcException as exc:
            if isinstance(data, dict) and "id" in data and "method" in data:
                self._send_response(data["id"], error=exc.to_response_error())
            raise


class RootrankServer(LanguageServer):
    """The language server: settings, per-document state and the scheduling of checks."""

    def __init__(self) -> None:
        super().__init__("rootrank", _version(), protocol_cls=RootrankProtocol, max_workers=4)
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

    def document(self, uri: str) -> TextDocument | None:
        """An open document, or None (never read from disk: the client owns unopened files)."""
        return self.workspace.text_documents.get(uri)

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


class _ClientLogHandler(logging.Handler):
    """Sends rootrank's own warnings (a skipped entry, a crashed rule) to the client's log."""

    def __init__(self, server: RootrankServer) -> None:
        super().__init__(logging.WARNING)
        self.server = server

    def emit(self, record: logging.LogRecord) -> None:
        if record.name.startswith("rootrank.lsp"):
            return  # the server reports its own problems itself
        try:
            level = types.MessageType.Error if record.levelno >= logging.ERROR else types.MessageType.Warning
            message = self.format(record)
            if not message.startswith("rootrank"):
                message = f"rootrank: {message}"
            self.server.log_once(self.key(record), message, level)
        except Exception:
            self.handleError(record)

    @staticmethod
    def key(record: logging.LogRecord) -> str:
        """Once per problem, not per file: a crashing rule would otherwise repeat on every keystroke."""
        args = record.args if isinstance(record.args, tuple) else ()
        kept = [str(a) for a in args if not (isinstance(a, str) and ("/" in a or "\\" in a))]
        error = repr(record.exc_info[1]) if record.exc_info else ""
        return "|".join([record.name, str(record.msg), *kept, error])


def _watch_parent(pid: int) -> None:
    """Exit when the client process is gone even though our stdin is still open (orphaned server)."""

    def alive() -> bool:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True

    def watch() -> None:
        while alive():
            time.sleep(3)
        os._exit(1)

    threading.Thread(target=watch, name="rootrank-parent-watch", daemon=True).start()


def create_server() -> RootrankServer:
    """A server with every feature registered (the order of registration is the order of dispatch)."""
    from rootrank.lsp import code_actions, commands, diagnostics, hover, logs

    server = RootrankServer()

    def kind_of(uri: str, language_id: str | None) -> str:
        if server.settings.is_log(uri, language_id):
            return "log"
        return "code" if diagnostics.is_checked(uri, language_id) else ""

    server.kind_of = kind_of

    @server.feature(types.INITIALIZE)
    def initialize(ls: RootrankServer, params: types.InitializeParams) -> None:
        ls.loop = asyncio.get_running_loop()
        ls.apply_settings(params.initialization_options)
        handler = _ClientLogHandler(ls)
        handler.setFormatter(logging.Formatter("%(message)s"))
        logging.getLogger("rootrank").addHandler(handler)
        # A cancel for a request that already finished is normal traffic, not worth an error in the
        # user's output channel (pygls logs it as a warning on stderr, which clients show as errors).
        logging.getLogger("pygls.protocol.json_rpc").setLevel(logging.ERROR)
        if params.process_id and params.process_id != os.getpid():
            _watch_parent(params.process_id)

    @server.feature(types.INITIALIZED)
    async def initialized(ls: RootrankServer, params: types.InitializedParams) -> None:
        await ls.pull_settings()

    @server.feature(types.WORKSPACE_DID_CHANGE_CONFIGURATION)
    async def did_change_configuration(ls: RootrankServer, params: types.DidChangeConfigurationParams) -> None:
        # Push-style clients send the settings; pull-style ones (VS Code) send null and expect a request.
        if has_settings(params.settings):
            ls.apply_settings(params.settings)
        else:
            await ls.pull_settings()

    @server.feature(types.TEXT_DOCUMENT_DID_OPEN)
    def did_open(ls: RootrankServer, params: types.DidOpenTextDocumentParams) -> None:
        ls.dispatch(types.TEXT_DOCUMENT_DID_OPEN, params)

    @server.feature(types.TEXT_DOCUMENT_DID_CHANGE)
    def did_change(ls: RootrankServer, params: types.DidChangeTextDocumentParams) -> None:
        ls.dispatch(types.TEXT_DOCUMENT_DID_CHANGE, params)

    @server.feature(types.TEXT_DOCUMENT_DID_SAVE, types.SaveOptions(include_text=False))
    def did_save(ls: RootrankServer, params: types.DidSaveTextDocumentParams) -> None:
        ls.dispatch(types.TEXT_DOCUMENT_DID_SAVE, params)

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: RootrankServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.dispatch(types.TEXT_DOCUMENT_DID_CLOSE, params)
        ls.forget(params.text_document.uri)
        ls.publish(params.text_document.uri, None, [])

    for module in (diagnostics, logs, hover, code_actions, commands):
        module.register(server)
    return server


def main() -> int:
    """Serve over stdio until the client says exit or goes away; returns the exit status."""
    logging.basicConfig(level=logging.WARNING, stream=sys.stderr, format="%(levelname)s %(name)s: %(message)s")
    server = create_server()
    # What start-up allocated (modules, the lsprotocol classes, cattrs hooks) lives as long as the server:
    # move it out of the collector's sight, then collect normally (`python -m rootrank.lsp` starts with
    # the collector off during the imports).
    gc.freeze()
    gc.enable()
    server.start_io()
    code = 0 if server.protocol._shutdown else 1
    for stream in (sys.stdout, sys.stderr):
        # closed by the exit notification, or the client is gone
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    # Worker threads may still be busy with an abandoned diagnosis: don't wait for them.
    os._exit(code)
