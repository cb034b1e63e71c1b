"""`rootrank lsp`: the language server (pygls 2, stdio), assembled.

The server is a small core (core.py: per-document state, scheduling, fan-out of document notifications,
where a feature that raises is logged to the client and the others still run) plus feature modules,
each with a `register(server)` function: diagnostics (code and configs), logs (training logs), hover,
code_actions, commands. This module builds the core, registers the features, forwards rootrank's
warnings to the client's log, and exits when the client goes away.
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

from lsprotocol import types

from rootrank.lsp.core import RootrankServer
from rootrank.lsp.settings import has_settings


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
    from rootrank.lsp import code_actions, commands, diagnostics, hover, logs, notebooks
    from rootrank.lsp import measure as measure_command

    server = RootrankServer(notebook_sync=notebooks.SYNC)

    def kind_of(uri: str, language_id: str | None) -> str:
        if notebooks.is_cell(server, uri):
            return notebooks.KIND if language_id in (None, "python") else ""
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

    for method in (types.NOTEBOOK_DOCUMENT_DID_OPEN, types.NOTEBOOK_DOCUMENT_DID_CHANGE,
                   types.NOTEBOOK_DOCUMENT_DID_SAVE, types.NOTEBOOK_DOCUMENT_DID_CLOSE):
        server.feature(method)(lambda ls, params, method=method: ls.dispatch(method, params))

    @server.feature(types.TEXT_DOCUMENT_DID_CLOSE)
    def did_close(ls: RootrankServer, params: types.DidCloseTextDocumentParams) -> None:
        ls.dispatch(types.TEXT_DOCUMENT_DID_CLOSE, params)
        ls.forget(params.text_document.uri)
        ls.publish(params.text_document.uri, None, [])

    for module in (diagnostics, notebooks, logs, hover, code_actions, commands, measure_command):
        module.register(server)
    from rootrank.lsp import workspace_scan

    workspace_scan.register(server)
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
