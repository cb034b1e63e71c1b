"""Which inputs to read (files as given, directories of per-rank logs, or stdin), and reading them in
chunks of whole lines (a log of any size is never held in memory).

Compressed logs (gzip, bzip2, xz: what the standard library reads) are decompressed as they are read;
zstd, which it cannot read, is refused with the command that decompresses it.

Unreadable input raises `InputError` with a one-line message for the front end to print.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO, Protocol, cast

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


COMPRESSED_SUFFIXES = (".gz", ".bz2", ".xz", ".zst")


def _looks_like_log(path: Path) -> bool:
    name = path.name.lower()
    for suffix in COMPRESSED_SUFFIXES:
        name = name.removesuffix(suffix)
    return name.endswith((".log", ".txt", ".out", ".err")) or name in ("stderr", "stdout")


# (magic bytes, format); gzip, bzip2 and xz are read by the standard library
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x1f\x8b", "gzip"), (b"BZh", "bzip2"), (b"\xfd7zXZ\x00", "xz"), (b"\x28\xb5\x2f\xfd", "zstd"))
MAGIC_BYTES = 6


def compression_of(head: bytes) -> str | None:
    """The compression format `head` (a stream's first bytes) starts with, or None."""
    return next((what for magic, what in _MAGIC if head.startswith(magic)), None)


def decompressing(name: str, handle: BinaryIO, head: bytes) -> BinaryIO | None:
    """A reader of the decompressed bytes when `head` says the stream is compressed; None for plain
    text. Raises InputError for a format the standard library cannot read."""
    what = compression_of(head)
    if what == "gzip":
        import gzip

        return cast(BinaryIO, gzip.GzipFile(fileobj=handle, mode="rb"))
    if what == "bzip2":
        import bz2

        return cast(BinaryIO, bz2.BZ2File(handle, "rb"))
    if what == "xz":
        import lzma

        return cast(BinaryIO, lzma.LZMAFile(handle, "rb"))
    if what is not None:
        shown = "-" if name == "-" else name
        raise InputError(f"{name}: {what}-compressed, which Python cannot read; decompress it first "
                         f"(zstd -dc {shown} | rootrank diagnose -)")
    return None


# A compressed stream that is cut short or corrupt raises these while it is read.
DECOMPRESSION_ERRORS: tuple[type[Exception], ...] = (EOFError, OSError, ValueError)


class ReadsInto(Protocol):
    """A binary stream that can read into a caller's buffer (files, stdin's buffer, BytesIO)."""

    def readinto(self, buffer: memoryview, /) -> int | None: ...


class LineChunks:
    """Successive pieces of a byte stream as (buffer, cut): buffer[:cut] holds whole lines, except that
    a line longer than `max_line_bytes` is cut there and the last line may lack its newline.

    The buffer is reused: its bytes are only valid until the next step of the iteration. Reading into
    one buffer, and carrying only the unfinished line to its front, avoids allocating (and faulting in)
    a fresh chunk-sized object per read, which costs several times the read itself.
    """

    # Past the size it was told, a stream is read on in steps of this (a log still being written).
    GROWTH_READ = 64 << 10

    def __init__(self, handle: ReadsInto, chunk_bytes: int, max_line_bytes: int, limit: int | None = None,
                 size_hint: int | None = None) -> None:
        self.handle = handle
        self.chunk_bytes = chunk_bytes
        # The bytes the stream is expected to hold: a small file gets a small buffer (thousands of
        # per-rank files must not each allocate a full chunk).
        self.size_hint = size_hint
        self.max_line_bytes = max_line_bytes
        self.limit = limit  # how many bytes to read in all; may be changed while iterating
        # Asked for a new limit when the limit is reached (None: stop there).
        self.extend: Callable[[], int | None] | None = None
        self.read = 0  # bytes read so far

    def __iter__(self) -> Iterator[tuple[bytearray, int]]:
        hint = self.size_hint
        buf = bytearray(self.chunk_bytes if hint is None else min(self.chunk_bytes, hint + 1))
        carried = 0  # an unfinished line at buf[:carried]
        while True:
            if self.limit is not None and self.read >= self.limit and self.extend is not None:
                self.limit = self.extend() or self.limit
            want = self.chunk_bytes if self.limit is None else max(0, min(self.chunk_bytes, self.limit - self.read))
            if hint is not None:
                want = min(want, max(hint - self.read + 1, self.GROWTH_READ))
            if len(buf) < carried + want:
                buf.extend(bytes(carried + want - len(buf)))  # only while a very long line is carried
            got = _fill(self.handle, buf, carried, want)
            self.read += got
            end = carried + got
            if got == 0:
                if carried:
                    yield buf, carried
                return
            cut = buf.rfind(b"\n", 0, end) + 1
            if cut == 0:
                if end < self.max_line_bytes:
                    carried = end
                    continue
                cut = end
            yield buf, cut
            carried = end - cut
            if carried:
                buf[:carried] = buf[cut:end]


def _fill(handle: ReadsInto, buf: bytearray, start: int, want: int) -> int:
    """Read up to `want` bytes into buf[start:], fewer only at the end of the stream."""
    got = 0
    with memoryview(buf) as view:
        while got < want:
            n = handle.readinto(view[start + got: start + want])
            if not n:
                break
            got += n
    return got


def remaining_bytes(handle: object) -> int | None:
    """How many bytes a regular file or an in-memory stream holds past its position; None for pipes."""
    try:
        if isinstance(handle, io.BytesIO):
            with handle.getbuffer() as view:
                return max(0, view.nbytes - handle.tell())
        fileno = getattr(handle, "fileno", None)
        tell = getattr(handle, "tell", None)
        if fileno is None or tell is None:
            return None
        status = os.fstat(fileno())
        if not stat.S_ISREG(status.st_mode):
            return None
        return max(0, status.st_size - int(tell()))
    except (OSError, ValueError, io.UnsupportedOperation):
        return None
