"""Which runs a scanned root holds, and each run's fingerprint (its files, sizes and mtimes).

A run is one entry of the root: a folder (one job's logs, per-rank files included, found as
`rootrank diagnose DIR` finds them) or a single file. A root that is itself a file is one run. The
fingerprint is what the resume cache compares: a run whose files, sizes and mtimes are unchanged is
not read again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from rootrank.diagnose.read import InputError, expand_paths


@dataclass(frozen=True, slots=True)
class Run:
    name: str
    path: str  # absolute
    files: tuple[tuple[str, int, int], ...]  # (path relative to the run, size, mtime in ns), sorted
    problem: str | None = None  # why its files cannot even be listed

    @property
    def size(self) -> int:
        return sum(f[1] for f in self.files)

    @property
    def newest_mtime_ns(self) -> int | None:
        return max((f[2] for f in self.files), default=None)


def discover(root: str) -> list[Run]:
    """The runs under `root`, sorted by name; raises InputError when `root` itself is unusable."""
    top = Path(root)
    if not top.exists():
        raise InputError(f"{root}: no such file or directory")
    if top.is_file():
        return [_run(top.name, top)]
    if not top.is_dir():
        raise InputError(f"{root}: not a directory or a regular file")
    try:
        entries = sorted(p for p in top.iterdir() if not p.name.startswith("."))
    except OSError as exc:
        raise InputError(f"{root}: {exc.strerror or exc}") from exc
    return [_run(p.name, p) for p in entries if p.is_dir() or p.is_file()]


def run_of(path: Path, name: str | None = None) -> Run:
    """One file or folder as a run of its own (named by its file name unless told)."""
    return _run(name or path.name, path)


def _run(name: str, path: Path) -> Run:
    absolute = str(path.resolve())
    try:
        sources = expand_paths([str(path)])
        files = []
        for source in sources:
            assert source.path is not None
            status = os.stat(source.path)
            relative = os.path.relpath(source.path, path) if path.is_dir() else path.name
            files.append((relative, status.st_size, status.st_mtime_ns))
    except InputError as exc:
        message = str(exc)
        # The folder is named by the run; the reason is what the row shows.
        reason = message.split(": ", 1)[1] if message.startswith(f"{path}: ") else message
        return Run(name, absolute, (), reason)
    except OSError as exc:
        return Run(name, absolute, (), exc.strerror or str(exc))
    return Run(name, absolute, tuple(sorted(files)))
