"""`workspace/executeCommand` `rootrank.diagnose`: diagnose a piece of log text.

Arguments: `[text]`, `[text, sourceUri]`, or `[{"text": ..., "uri": ...}]`. An empty text with the URI
of an open document diagnoses that document; with the URI of a file under a workspace folder (symlinks
resolved), that file, streamed through the engine as the CLI reads it (never read whole). Any other file is
refused: the arguments come from whatever runs in the editor. The result is exactly the JSON of
`rootrank diagnose --format json` plus a `markdown` field. The main use is text pasted from a terminal
selection (partial, wrapped, with prompt lines): it is handed to the engine as is, like stdin.
"""

from __future__ import annotations

import asyncio
import os
import stat
import threading
from typing import Any

from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import to_fs_path

from rootrank.lsp import engine
from rootrank.lsp.core import RootrankServer  # at run time: pygls reads the handler's annotations
from rootrank.lsp.transport import uri_problem

DIAGNOSE = "rootrank.diagnose"
MAX_FILE_BYTES = 256 * 1024 * 1024


def parse_arguments(args: tuple[Any, ...]) -> tuple[str | None, str | None]:
    """(text, uri) from the command's arguments; raises JsonRpcInvalidParams on anything else."""
    if len(args) == 1 and isinstance(args[0], dict):
        options = args[0]
        text, uri = options.get("text"), options.get("uri", options.get("source"))
    elif 1 <= len(args) <= 2:
        text, uri = args[0], args[1] if len(args) == 2 else None
    else:
        raise JsonRpcInvalidParams(f"{DIAGNOSE} takes [text] or [text, sourceUri], got {len(args)} arguments")
    if text is not None and not isinstance(text, str):
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: the text must be a string, not {type(text).__name__}")
    if uri is not None and not isinstance(uri, str):
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: the source must be a URI string, not {type(uri).__name__}")
    problem = uri_problem(uri) if uri is not None else None
    if problem is not None:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: {problem}")
    if not text and not uri:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: nothing to diagnose (empty text and no source)")
    return text, uri


def _source_path(uri: str) -> str:
    if "://" not in uri:
        return uri
    try:
        return to_fs_path(uri) or uri
    except ValueError as exc:  # uri_problem let it through, the URI parser did not
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: the source URI cannot be parsed: {exc}") from None


def workspace_source(ls: RootrankServer, path: str) -> str:
    """The file to read for `path`: resolved, and under a workspace folder; else InvalidParams."""
    real = ls.workspace_file(path)
    if real is None:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: {path} is neither an open document nor a file under a "
                                   "workspace folder; open it in the editor, or pass its text")
    return real


def read_source_file(path: str) -> str:
    """A log file's text for the command; runs in a worker thread.

    Only regular files: a FIFO would block on open() and a device (`/dev/zero`) reports size 0 and never
    ends. The read itself is bounded too, in case the file grows while it is read. (The command itself
    streams files through `run_file`; this is for callers that want the text.)
    """
    check_source_file(path)
    try:
        with open(path, "rb") as handle:
            data = handle.read(MAX_FILE_BYTES + 1)
    except OSError as exc:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: cannot read {path}: {exc.strerror}") from exc
    if len(data) > MAX_FILE_BYTES:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: {path} is larger than {MAX_FILE_BYTES} bytes")
    return data.decode("utf-8", "replace")


def run(text: str, source: str, cancel: threading.Event | None = None) -> dict[str, Any]:
    """The command's result (runs in a worker thread)."""
    return _result(engine.diagnose_text(text, source=source, cancel=cancel))


def run_file(path: str, cancel: threading.Event | None = None) -> dict[str, Any]:
    """The command's result for a file that is not open: streamed as the CLI reads it, never read whole
    (a multi-GB log would otherwise sit in the server's memory, and again as text). Runs in a worker thread."""
    check_source_file(path)
    try:
        diagnosis = engine.diagnose_file(path, cancel, MAX_FILE_BYTES)
    except engine.FileTooLargeError:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: {path} grew larger than {MAX_FILE_BYTES} bytes") from None
    except OSError as exc:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: cannot read {path}: {exc.strerror}") from exc
    return _result(diagnosis)


def check_source_file(path: str) -> None:
    """Only regular files, up to MAX_FILE_BYTES: a FIFO would block on open() and a device (`/dev/zero`)
    reports size 0 and never ends."""
    try:
        status = os.stat(path)
    except OSError as exc:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: cannot read {path}: {exc.strerror}") from exc
    if not stat.S_ISREG(status.st_mode):
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: {path} is not a regular file")
    if status.st_size > MAX_FILE_BYTES:
        raise JsonRpcInvalidParams(f"{DIAGNOSE}: {path} is larger than {MAX_FILE_BYTES} bytes")


def _result(diagnosis: Any) -> dict[str, Any]:
    result = dict(engine.diagnosis_json(diagnosis))
    result["markdown"] = engine.diagnosis_markdown(diagnosis)
    return result


def register(server: RootrankServer) -> None:
    @server.command(DIAGNOSE)
    async def diagnose(ls: RootrankServer, *args: Any) -> dict[str, Any]:
        text, uri = parse_arguments(args)
        source = _source_path(uri) if uri else "-"
        loop = asyncio.get_running_loop()
        document = ls.document(uri) if not text and uri else None
        cancel = threading.Event()
        try:
            if not text and uri and document is None:
                path = workspace_source(ls, source)
                return await loop.run_in_executor(ls.log_executor, run_file, path, cancel)
            if document is not None:
                text = document.source
            return await loop.run_in_executor(ls.log_executor, run, text or "", source, cancel)
        except asyncio.CancelledError:  # $/cancelRequest: the worker stops at its next check
            cancel.set()
            raise
