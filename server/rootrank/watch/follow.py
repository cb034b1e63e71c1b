"""Following log files another process writes, like `tail -F`: new files that appear in a followed
folder are followed from their start, a file that is replaced (rotated) or truncated is read to its end
and then followed anew from the start of the new file.

Polling (every POLL seconds) works the same on Linux, macOS and Windows and needs no dependency; a
followed file is read only when its size or identity changed.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from rootrank.diagnose.read import _looks_like_log

POLL = 0.2
READ_BYTES = 1 << 20
MAX_FOLLOWED = 4096


@dataclass
class _Followed:
    path: Path
    handle: BinaryIO
    identity: tuple[int, int]
    position: int = 0
    old: list[BinaryIO] = field(default_factory=list)  # rotated-away handles still to read to their end


class Follower:
    """Call `poll()` every POLL seconds: new bytes of each followed file go to `on_data(path, data)`;
    `on_new(path)` is called the first time a file is seen and `on_rotated(path)` when it is replaced."""

    def __init__(self, paths: list[str], on_data: Callable[[Path, bytes], None],
                 on_new: Callable[[Path], None] | None = None,
                 on_rotated: Callable[[Path], None] | None = None) -> None:
        self.roots = [Path(p) for p in paths]
        self.on_data = on_data
        self.on_new = on_new
        self.on_rotated = on_rotated
        self.files: dict[Path, _Followed] = {}
        self.skipped = 0  # files past MAX_FOLLOWED

    def candidates(self) -> list[Path]:
        """The files the given paths name now: files as given, log-like files under folders."""
        found: list[Path] = []
        for root in self.roots:
            if root.is_dir():
                found.extend(sorted(p for p in root.rglob("*") if p.is_file() and _looks_like_log(p)))
            elif root.is_file():
                found.append(root)
        return found

    def poll(self) -> int:
        """Read what is new; returns the number of bytes read."""
        got = 0
        for path in self.candidates():
            if path not in self.files:
                if len(self.files) >= MAX_FOLLOWED:
                    self.skipped += 1
                    continue
                if not self._open(path):
                    continue
                if self.on_new is not None:
                    self.on_new(path)
        for followed in list(self.files.values()):
            got += self._read(followed)
        return got

    def _open(self, path: Path) -> bool:
        try:
            handle = path.open("rb")
            status = os.fstat(handle.fileno())
        except OSError:
            return False
        self.files[path] = _Followed(path, handle, (status.st_dev, status.st_ino))
        return True

    def _read(self, followed: _Followed) -> int:
        got = 0
        for old in followed.old:
            got += self._drain(followed.path, old)
            old.close()
        followed.old.clear()
        try:
            status = os.stat(followed.path)
        except OSError:
            status = None  # moved away, the new one not there yet: read the old one on
        if status is not None and (status.st_dev, status.st_ino) != followed.identity:
            got += self._drain(followed.path, followed.handle)  # the rest of the rotated-away file
            followed.old.append(followed.handle)
            try:
                followed.handle = followed.path.open("rb")
            except OSError:
                return got
            followed.identity = (status.st_dev, status.st_ino)
            followed.position = 0
            if self.on_rotated is not None:
                self.on_rotated(followed.path)
        elif status is not None and status.st_size < followed.position:
            followed.handle.seek(0)  # truncated in place (copytruncate)
            followed.position = 0
            if self.on_rotated is not None:
                self.on_rotated(followed.path)
        n = self._drain(followed.path, followed.handle)
        followed.position += n
        return got + n

    def _drain(self, path: Path, handle: BinaryIO) -> int:
        got = 0
        while True:
            try:
                data = handle.read(READ_BYTES)
            except (OSError, ValueError):
                return got
            if not data:
                return got
            got += len(data)
            self.on_data(path, data)

    def close(self) -> None:
        for followed in self.files.values():
            for handle in (followed.handle, *followed.old):
                handle.close()
