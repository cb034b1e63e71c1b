"""`workspace/executeCommand` `rootrank.measure`: `rootrank measure` from the editor.

Arguments: `[{"target": "pkg.mod:build"}]` or `[{"hfConfig": "config.json", "batchSize": 4, "seqLen": 4096}]`,
optionally `device`, `dtype`, `budget` ("20GiB") and `python`. The probe runs in a subprocess of the
workspace's interpreter (the `rootrank.python` setting, else the active virtualenv / `.venv` of the
workspace folder); progress goes to `$/progress` (cancellable), and `$/cancelRequest` or a cancel from the
progress UI stops the subprocess. The result is the JSON of `rootrank measure --format json` plus a
`markdown` report. `cwd` and `hfConfig` must lie under a workspace folder. The last measurement of each workspace folder is kept for the hover on checkpoint calls.
"""

from __future__ import annotations

import asyncio
import os
import threading
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcInvalidParams, JsonRpcRequestCancelled
from pygls.uris import to_fs_path

from rootrank.lsp.core import RootrankServer  # at run time: pygls reads the handler's annotations

if TYPE_CHECKING:
    from rootrank.measure import Measurement

MEASURE = "rootrank.measure"
_LAST: dict[str, Measurement] = {}  # workspace folder -> its last measurement, for the hover


def last_measurement(path: str | None = None) -> Measurement | None:
    """The last measurement of the workspace folder holding `path` (else the latest of any)."""
    if path:
        folders = sorted((f for f in _LAST if path.startswith(f.rstrip(os.sep) + os.sep)), key=len, reverse=True)
        if folders:
            return _LAST[folders[0]]
    return next(reversed(_LAST.values()), None) if _LAST else None


def parse_arguments(args: tuple[Any, ...]) -> dict[str, Any]:
    if len(args) != 1 or not isinstance(args[0], dict):
        raise JsonRpcInvalidParams(f'{MEASURE} takes one object: {{"target": "pkg.mod:build"}} or '
                                   f'{{"hfConfig": "config.json", "batchSize": 1, "seqLen": 512}}')
    options = args[0]
    if bool(options.get("target")) == bool(options.get("hfConfig")):
        raise JsonRpcInvalidParams(f"{MEASURE}: give either target (MODULE:FACTORY) or hfConfig")
    for key in ("target", "hfConfig", "device", "dtype", "budget", "python", "cwd"):
        if options.get(key) is not None and not isinstance(options[key], str):
            raise JsonRpcInvalidParams(f"{MEASURE}: {key} must be a string")
    for key in ("batchSize", "seqLen"):
        if options.get(key) is not None and (not isinstance(options[key], int) or options[key] < 1):
            raise JsonRpcInvalidParams(f"{MEASURE}: {key} must be a positive integer")
    if options.get("device") not in (None, "meta", "cpu", "cuda"):
        raise JsonRpcInvalidParams(f"{MEASURE}: device must be meta, cpu or cuda")
    return options


def _folder(ls: RootrankServer) -> str:
    for folder in ls.workspace.folders.values():
        path = to_fs_path(folder.uri)
        if path:
            return path
    return ls.workspace.root_path or os.getcwd()


def check_paths(ls: RootrankServer, options: dict[str, Any], folder: str) -> None:
    """`cwd` and `hfConfig` must lie under a workspace folder (symlinks resolved; with no workspace folder,
    under the server's directory): the arguments come from whatever runs in the editor."""
    cwd = options.get("cwd") or folder
    paths = [("cwd", cwd)] + ([("hfConfig", os.path.join(cwd, options["hfConfig"]))] if options.get("hfConfig") else [])
    for key, path in paths:
        inside = ls.workspace_file(path) is not None if ls.workspace_roots() else \
            os.path.realpath(path).startswith(os.path.realpath(folder).rstrip(os.sep) + os.sep) \
            or os.path.realpath(path) == os.path.realpath(folder)
        if not inside:
            raise JsonRpcInvalidParams(f"{MEASURE}: {key} {path} is not under a workspace folder")


def run(options: dict[str, Any], folder: str, python_setting: str, cancelled: Callable[[], bool],
        on_progress: Callable[[str, int, int], None]) -> tuple[Measurement, dict[str, Any]]:
    """The measurement and the command's result (runs in a worker thread)."""
    from rootrank.measure import MeasureError, MeasureRequest, find_interpreter, measure, parse_bytes
    from rootrank.measure.render import measurement_to_json, render_markdown

    cwd = options.get("cwd") or folder
    try:
        budget = parse_bytes(options["budget"]) if options.get("budget") else None
    except ValueError:
        raise JsonRpcInvalidParams(f"{MEASURE}: budget {options['budget']!r} is not a size (e.g. 20GiB)") from None
    request = MeasureRequest(target=options.get("target"), hf_config=options.get("hfConfig"),
                             batch_size=int(options.get("batchSize") or 1), seq_len=int(options.get("seqLen") or 512),
                             device=options.get("device") or ("meta" if options.get("hfConfig") else "cpu"),
                             dtype=options.get("dtype"), cwd=cwd)
    python = find_interpreter(options.get("python") or python_setting or None, cwd)
    try:
        m = measure(request, python=python, budget=budget, on_progress=on_progress, cancelled=cancelled)
    except MeasureError as exc:
        if exc.kind == "cancelled":
            raise JsonRpcRequestCancelled(f"{MEASURE}: cancelled") from None
        detail = f"\n{exc.detail}" if exc.detail and exc.kind == "factory-raised" else ""
        raise JsonRpcInvalidParams(f"{MEASURE}: {exc}{detail}") from None
    result = measurement_to_json(m)
    result["markdown"] = render_markdown(m)
    return m, result


def register(server: RootrankServer) -> None:
    @server.command(MEASURE)
    async def measure_command(ls: RootrankServer, *args: Any) -> dict[str, Any]:
        options = parse_arguments(args)
        folder = _folder(ls)
        check_paths(ls, options, folder)
        loop = asyncio.get_running_loop()
        stop = threading.Event()
        token: str | None = None
        if ls.client_supports("window", "work_done_progress"):
            token = f"rootrank-measure-{uuid.uuid4().hex}"
            try:
                await ls.work_done_progress.create_async(token)
                ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
                    title="rootrank: measuring checkpointing", cancellable=True, message="starting", percentage=0))
            except Exception:
                token = None

        def cancelled() -> bool:
            if token is not None:
                future = ls.work_done_progress.tokens.get(token)
                if future is not None and future.cancelled():
                    stop.set()
            return stop.is_set()

        def progress(message: str, done: int, total: int) -> None:
            if token is None:
                return
            percentage = int(100 * done / total) if total else None
            report = types.WorkDoneProgressReport(message=message, percentage=percentage)
            loop.call_soon_threadsafe(ls.work_done_progress.report, token, report)

        try:
            m, result = await loop.run_in_executor(None, run, options, folder, ls.settings.python, cancelled, progress)
        except asyncio.CancelledError:  # $/cancelRequest: the worker kills the probe at its next check
            stop.set()
            raise
        finally:
            if token is not None:
                ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message="done"))
                ls.work_done_progress.tokens.pop(token, None)
        _LAST[folder] = m
        return result
