"""`workspace/executeCommand` `rootrank.scanLogs`: the workspace's log files that hold a failure.

Argument: `[{"include": [...globs], "exclude": [...globs], "maxFiles": N, "maxFileBytes": N}]`, each
optional (fleet/workspace.py has the defaults and the bounds). Every workspace folder is walked; the
files are read in a worker thread with `$/progress` (cancellable); `$/cancelRequest` or the progress
UI's cancel stops it between files. The result:

    {"failures": [{"path", "uri", "rule", "title", "rank", "host", "evidence", "evidenceLine"}],
     "skipped": [{"path", "reason"}], "scanned": N, "truncated": bool, "cancelled": bool}

`failures` holds the files whose row `rootrank scan` would mark failed (a root cause that failed the
job), in path order; unreadable files are among `skipped`, with the reason, and so are links to files
outside the workspace folders (never read). An include glob with a `..` segment or an absolute one is
InvalidParams.
"""

from __future__ import annotations

import asyncio
import os
import re
import threading
import uuid
from collections.abc import Callable
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams
from pygls.uris import from_fs_path, to_fs_path

from rootrank.lsp.core import RootrankServer  # at run time: pygls reads the handler's annotations

SCAN = "rootrank.scanLogs"


def parse_arguments(args: tuple[Any, ...]) -> dict[str, Any]:
    if not args:
        return {}
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(f'{SCAN} takes one object: {{"include": [...], "exclude": [...], '
                                   f'"maxFiles": 200, "maxFileBytes": 67108864}}')
    options = args[0]
    for key in ("include", "exclude"):
        value = options.get(key)
        if value is not None and (not isinstance(value, list) or not all(isinstance(g, str) for g in value)):
            raise JsonRpcInvalidParams(f"{SCAN}: {key} must be a list of glob strings")
    for glob in options.get("include") or ():
        # A glob only ever matches paths under a folder; one naming a place elsewhere is a mistake to report,
        # not a pattern to match nothing with (fleet/workspace.py confines the files read in any case).
        if _escapes(glob):
            raise JsonRpcInvalidParams(f"{SCAN}: include globs are relative to the workspace folders, "
                                       f"without '..' or an absolute path: {glob[:200]!r}")
    for key in ("maxFiles", "maxFileBytes"):
        value = options.get(key)
        if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 1):
            raise JsonRpcInvalidParams(f"{SCAN}: {key} must be a positive integer")
    return options


def _escapes(glob: str) -> bool:
    """Whether `glob` names a place outside the folder it is matched in: a `..` segment, or absolute."""
    text = glob.strip().replace("\\", "/")
    return ".." in text.split("/") or text.startswith(("/", "~")) or bool(re.match(r"[A-Za-z]:", text))


def folders_of(ls: RootrankServer) -> list[str]:
    paths = [to_fs_path(f.uri) for f in ls.workspace.folders.values()]
    found = [p for p in paths if p and os.path.isdir(p)]
    if not found and ls.workspace.root_path and os.path.isdir(ls.workspace.root_path):
        found = [ls.workspace.root_path]
    return found


def run(options: dict[str, Any], folders: list[str], cancelled: Callable[[], bool],
        on_progress: Callable[[int, int, str], None]) -> dict[str, Any]:
    """The command's result (runs in a worker thread)."""
    from rootrank.fleet import workspace

    exclude = options.get("exclude")
    scan = workspace.scan_workspace(
        folders, include=options.get("include") or workspace.DEFAULT_INCLUDE,
        exclude=workspace.DEFAULT_EXCLUDE if exclude is None else exclude,
        max_files=int(options.get("maxFiles") or workspace.MAX_FILES),
        max_file_bytes=int(options.get("maxFileBytes") or workspace.MAX_FILE_BYTES),
        cancelled=cancelled, on_progress=on_progress)
    failures = [{"path": row.path, "uri": from_fs_path(row.path), "rule": row.rule, "title": row.title,
                 "rank": row.rank, "host": row.host, "evidence": row.evidence, "evidenceLine": row.evidence_line}
                for row in scan.rows if row.failed]
    skipped = [{"path": s.path, "reason": s.reason} for s in scan.skipped]
    skipped += [{"path": row.path, "reason": row.error or "unreadable"} for row in scan.rows
                if row.status == "unreadable"]
    return {"failures": failures, "skipped": skipped, "scanned": len(scan.rows), "truncated": scan.truncated,
            "cancelled": scan.cancelled}


def register(server: RootrankServer) -> None:
    @server.command(SCAN)
    async def scan_command(ls: RootrankServer, *args: Any) -> dict[str, Any]:
        options = parse_arguments(args)
        folders = folders_of(ls)
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        token: str | None = None
        if ls.client_supports("window", "work_done_progress"):
            token = f"rootrank-scan-{uuid.uuid4().hex}"
            try:
                await ls.work_done_progress.create_async(token)
                ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="rootrank: scanning the workspace's logs", cancellable=True, percentage=0))
            except Exception:
                token = None

        def cancelled() -> bool:
            if token is not None:
                future = ls.work_done_progress.tokens.get(token)
                if future is not None and future.cancelled():
                    stop.set()
            return stop.is_set()

        def progress(done: int, total: int, path: str) -> None:
            if token is None:
                return
            report = types.WorkDoneProgressReport(message=os.path.basename(path),
                                                  percentage=int(100 * done / total) if total else None)
            loop.call_soon_threadsafe(ls.work_done_progress.report, token, report)

        try:
            return await loop.run_in_executor(ls.log_executor, run, options, folders, cancelled, progress)
        except asyncio.CancelledError:  # $/cancelRequest: the worker stops before its next file
            stop.set()
            raise
        finally:
            if token is not None:
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
                ls.work_done_progress.tokens.pop(token, None)
