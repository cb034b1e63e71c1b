"""Reading log input: files, directories of per-rank files, or stdin, streamed as decoded text lines.

Bytes are decoded as UTF-8 with invalid sequences replaced, one line at a time, so a log of any size
is never held in memory and binary junk cannot stop the read. Unreadable input raises `InputError`
with a one-line message for the front end to print.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

READ_CHUNK = 1 << 20
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


def iter_lines(source: Source) -> Iterator[str]:
    """Decoded lines of one source, newline removed; the file is open only while it is being read."""
    if source.path is None:
        stream = sys.stdin.buffer if hasattr(sys.stdin, "buffer") else None
        if stream is None:
            yield from (line.rstrip("\n") for line in sys.stdin)
            return
        yield from _decode_lines(stream)
        return
    try:
        with open(source.path, "rb") as handle:
            yield from _decode_lines(handle)
    except IsADirectoryError as exc:
        raise InputError(f"{source.name}: is a directory") from exc
    except OSError as exc:
        raise InputError(f"{source.name}: {exc.strerror or exc}") from exc


def _decode_lines(handle: BinaryIO) -> Iterator[str]:
    # Lines are split on b"\n" only: a "\r" inside a line is a progress-bar rewrite for normalize to handle.
    read = handle.read
    pending = b""
    while True:
        chunk = read(READ_CHUNK)
        if not chunk:
            break
        data = pending + chunk
        lines = data.split(b"\n")
        pending = lines.pop()
        for raw in lines:
            yield raw.decode("utf-8", "replace")
        if len(pending) > 8 * READ_CHUNK:
            # A single enormous line: hand over what we have rather than grow without bound.
            yield pending.decode("utf-8", "replace")
            pending = b""
    if pending:
        yield pending.decode("utf-8", "replace")
