"""The log files of an editor's workspace that hold a failure: found by globs, each read as a run of
its own (work.scan_run, as `rootrank scan` reads a run), with bounded work on a huge workspace.

- Finding: a walk of each folder that never enters the usual heavy folders (`.git`, `node_modules`,
  virtualenvs, caches) nor any matching an exclude glob, and stops after MAX_ENTRIES entries.
- Reading: at most `max_files` files, none larger than `max_file_bytes` (those are listed as skipped,
  with the reason, never dropped silently); `cancelled()` is asked between folders and between files.
- Confined to the folders: the walk never follows a symlinked folder, and a file whose real path
  (symlinks resolved) is not under one of the folders (resolved too) is listed as skipped, never read;
  a file is read by its real path, the one that was checked, and once however many links reach it. The globs only ever match paths relative
  to a folder (they have no `..`), so no glob reaches outside one; the language server refuses an
  include glob with a `..` segment or an absolute one rather than let it match nothing silently.

Globs are VS Code's: `*` within a path segment, `**` across segments, `?` one character; a glob with
no `/` matches a file name in any folder (`slurm-*.out` is `**/slurm-*.out`).
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path

from rootrank.fleet.record import RunResult
from rootrank.fleet.runs import run_of
from rootrank.fleet.work import scan_run
from rootrank.library import Library, load_library

DEFAULT_INCLUDE = ("**/slurm-*.out", "**/*.err", "**/logs/**/*.log")
DEFAULT_EXCLUDE = ("**/.git", "**/node_modules", "**/.venv", "**/venv", "**/__pycache__", "**/site-packages",
                   "**/.mypy_cache", "**/.ruff_cache", "**/.pytest_cache", "**/.tox")
MAX_FILES = 200
MAX_FILE_BYTES = 64 << 20
MAX_ENTRIES = 200_000  # folder entries looked at, all folders together


@dataclass(frozen=True)
class Skipped:
    path: str
    reason: str


@dataclass(frozen=True)
class WorkspaceScan:
    rows: tuple[RunResult, ...]  # every file read, in path order (the caller keeps the failed ones)
    skipped: tuple[Skipped, ...]  # matched but not read: too large, past the file limit, unreadable
    truncated: bool  # the walk stopped at MAX_ENTRIES: files beyond it were not looked at
    cancelled: bool


def glob_regex(glob: str) -> re.Pattern[str]:
    """The regex of a VS Code glob over a '/'-separated path relative to the folder."""
    glob = glob.strip().replace("\\", "/").lstrip("/")
    if "/" not in glob:
        glob = "**/" + glob
    out = []
    i = 0
    while i < len(glob):
        if glob.startswith("**/", i):
            out.append("(?:.*/)?")
            i += 3
        elif glob.startswith("**", i):
            out.append(".*")
            i += 2
        elif glob[i] == "*":
            out.append("[^/]*")
            i += 1
        elif glob[i] == "?":
            out.append("[^/]")
            i += 1
        elif glob[i] == "{" and "}" in glob[i:]:
            end = glob.index("}", i)
            out.append("(?:" + "|".join(re.escape(p) for p in glob[i + 1:end].split(",")) + ")")
            i = end + 1
        else:
            out.append(re.escape(glob[i]))
            i += 1
    return re.compile("".join(out) + r"\Z")


def find_logs(folders: Sequence[str], include: Sequence[str] = DEFAULT_INCLUDE,
              exclude: Sequence[str] = DEFAULT_EXCLUDE, cancelled: Callable[[], bool] = lambda: False,
              max_entries: int = MAX_ENTRIES) -> tuple[list[str], bool]:
    """(the files matching `include` under `folders`, in path order; whether the walk was cut short)."""
    wanted = [glob_regex(g) for g in include if g.strip()]
    unwanted = [glob_regex(g) for g in exclude if g.strip()]
    found: list[str] = []
    seen = 0
    for folder in folders:
        top = Path(folder)
        for current, dirs, files in os.walk(top):
            if cancelled():
                return sorted(found), True
            relative = Path(current).relative_to(top).as_posix()
            prefix = "" if relative == "." else relative + "/"
            dirs[:] = sorted(d for d in dirs if not any(p.match(prefix + d) for p in unwanted))
            seen += len(dirs) + len(files)
            for name in files:
                path = prefix + name
                if any(p.match(path) for p in wanted) and not any(p.match(path) for p in unwanted):
                    found.append(os.path.join(current, name))
            if seen >= max_entries:
                return sorted(found), True
    return sorted(found), False


def scan_workspace(folders: Sequence[str], include: Sequence[str] = DEFAULT_INCLUDE,
                   exclude: Sequence[str] = DEFAULT_EXCLUDE, max_files: int = MAX_FILES,
                   max_file_bytes: int = MAX_FILE_BYTES, cancelled: Callable[[], bool] = lambda: False,
                   on_progress: Callable[[int, int, str], None] | None = None,
                   library: Library | None = None) -> WorkspaceScan:
    """Find the workspace's log files and read each one (see the module's docstring for the bounds)."""
    files, truncated = find_logs(folders, include, exclude, cancelled)
    roots = [os.path.realpath(folder) for folder in folders]
    skipped: list[Skipped] = []
    todo: list[str] = []
    taken: dict[str, str] = {}  # real path -> the path it was found by
    for path in files:
        real = _confined(path, roots)
        if real is None:
            skipped.append(Skipped(path, "a link to a file outside the workspace folders: not read"))
            continue
        if real in taken:  # two links, or a link and its file: one file, read once
            skipped.append(Skipped(path, f"the same file as {taken[real]}: read once"))
            continue
        taken[real] = path
        path = real
        try:
            size = os.stat(path).st_size
        except OSError as exc:
            skipped.append(Skipped(path, exc.strerror or str(exc)))
            continue
        if size > max_file_bytes:
            skipped.append(Skipped(path, f"larger than {max_file_bytes >> 20} MiB ({size >> 20} MiB): "
                                         "diagnose it on its own"))
        elif len(todo) >= max_files:
            skipped.append(Skipped(path, f"past the first {max_files} files"))
        else:
            todo.append(path)
    rows: list[RunResult] = []
    library = library or load_library()
    for done, row in enumerate(_read(todo, library, cancelled)):
        rows.append(row)
        if on_progress is not None:
            on_progress(done + 1, len(todo), row.path)
    stopped = cancelled()
    return WorkspaceScan(tuple(rows), tuple(skipped), truncated and not stopped, stopped)


def _confined(path: str, roots: Sequence[str]) -> str | None:
    """`path` with its symlinks resolved when that is under one of `roots` (already resolved), else None."""
    try:
        real = os.path.realpath(path)
    except (OSError, ValueError):
        return None
    for root in roots:
        if real == root or real.startswith(root.rstrip(os.sep) + os.sep):
            return real
    return None


def _read(paths: list[str], library: Library, cancelled: Callable[[], bool]) -> Iterator[RunResult]:
    for path in paths:
        if cancelled():
            return
        yield scan_run(run_of(Path(path)), library)
