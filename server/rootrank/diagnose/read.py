"""Which inputs to read: files as given, directories of per-rank logs, or stdin.

The bytes themselves are read in chunks by select.py (a log of any size is never held in memory).
Unreadable input raises `InputError` with a one-line message for the front end to print.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

MAX_FILES = 100_000


class InputError(Exception):
    """Input that cannot be read; the message is one line, fit for the user."""


@dataclass(frozen=True)
class Source:
    name: str  # what evidence refers to: the path as given, or "-"
    path: Path | None  # None for stdin / in-memory text


def expand_paths(paths: list[str]) -> list[Source]:
    """Files as given; directories walked for log-like files (sorted, bounded)."""
    sources: list[Source] = []
    for given in paths:
        if given == "-":
            sources.append(Source("-", None))
            continue
        path = Path(given)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and _looks_like_log(p))
            if not found:
                raise InputError(f"{given}: directory holds no log files (*.log, *.txt, *.out, *.err)")
            sources.extend(Source(str(p), p) for p in found)
        elif path.exists():
            if not path.is_file():
                raise InputError(f"{given}: not a regular file")
            if not os.access(path, os.R_OK):
                raise InputError(f"{given}: permission denied")
            sources.append(Source(given, path))
        else:
            raise InputError(f"{given}: no such file")
        if len(sources) > MAX_FILES:
            raise InputError(f"more than {MAX_FILES} input files")
    return sources


def _looks_like_log(path: Path) -> bool:
    name = path.name.lower()
    return name.endswith((".log", ".txt", ".out", ".err")) or name in ("stderr", "stdout")
