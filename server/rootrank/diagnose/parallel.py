"""Using the second core for big files: a forked worker finds, numbers and records the candidate lines
of the file's second part while this process works through the first.

The worker runs the very same prefilter (inherited through fork), so the candidates, and therefore the
diagnosis, are identical to a single-process run. It also counts the part's lines, so this process never
reads or counts the second part: it reads only the candidate lines (and the lines around them that the
pipeline asks for) at their offsets. The candidates go through an unlinked temporary file, not memory,
so a log whose every line is a candidate still costs constant memory. Where fork is unavailable, or the
file is small, everything stays in one process.
"""

from __future__ import annotations

import multiprocessing
import os
import tempfile
from array import array
from collections.abc import Iterator
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass

from rootrank.diagnose.prefilter import Prefilter

MIN_PARALLEL_BYTES = 64 << 20
# The share of the file the worker scans. Both processes read, count lines and run the prefilter over
# their part; this one also runs the per-line pipeline over its candidates, which are few outside a
# failure cascade (and the cascade, at the end, is the worker's part: processed after the join).
WORKER_SHARE = 0.5
READ_BYTES = 8 << 20
RECORDS_PER_READ = 1 << 16  # candidate records read back at a time (16 bytes each)

_PREFILTER: Prefilter | None = None  # set before forking; read by the worker


@dataclass(frozen=True)
class PartSummary:
    """What the worker found in [boundary, size)."""

    candidates: int  # records written: (absolute offset, 0-based line index within the part) pairs
    newlines: int  # newline bytes in the part
    ends_with_newline: bool


def _line_start_at_or_after(path: str, offset: int) -> int:
    """The first line start at or after `offset`."""
    if offset == 0:
        return 0
    with open(path, "rb") as handle:
        handle.seek(offset - 1)
        position = offset - 1
        while True:
            block = handle.read(1 << 16)
            if not block:
                return position
            newline = block.find(b"\n")
            if newline >= 0:
                return position + newline + 1
            position += len(block)


def _scan_range(path: str, start: int, end: int, out_fd: int) -> PartSummary:
    """Write (offset, line index) records for the candidate lines of [start, end) to `out_fd`."""
    assert _PREFILTER is not None
    lines = 0
    written = 0
    last_byte = b"\n"
    with open(path, "rb") as handle:
        handle.seek(start)
        offset = start
        pending = b""
        while offset < end:
            chunk = handle.read(min(READ_BYTES, end - offset))
            if not chunk:
                break
            offset += len(chunk)
            last_byte = chunk[-1:]
            buf = pending + chunk if pending else chunk
            cut = buf.rfind(b"\n") + 1 if offset < end else len(buf)
            if cut == 0:
                pending = buf
                continue
            base = offset - len(buf)
            records = array("q")
            previous = 0
            for line_start in _PREFILTER.candidates(buf, 0, cut):
                lines += buf.count(b"\n", previous, line_start)
                previous = line_start
                records.append(base + line_start)
                records.append(lines)
            lines += buf.count(b"\n", previous, cut)
            if records:
                os.write(out_fd, records.tobytes())
                written += len(records) // 2
            pending = buf[cut:]
    return PartSummary(written, lines, last_byte == b"\n")


class SplitScan:
    """The worker for [boundary, size) of one file; this process reads [0, boundary) itself."""

    def __init__(self, path: str, size: int, prefilter: Prefilter, already_read: int = 0) -> None:
        global _PREFILTER
        self.size = size
        # A line start, and past what this process has already read (its first chunk).
        self.boundary = max(_line_start_at_or_after(path, int(size * (1 - WORKER_SHARE))), already_read)
        # Closed by close(): the file outlives this call, being written by the worker and read later.
        self._records = tempfile.TemporaryFile(prefix="rootrank-candidates-")  # noqa: SIM115
        _PREFILTER = prefilter
        context = multiprocessing.get_context("fork")
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        self._future: Future[PartSummary] = self._pool.submit(
            _scan_range, path, self.boundary, size, self._records.fileno())

    def summary(self) -> PartSummary:
        """Wait for the worker."""
        result = self._future.result()
        self._pool.shutdown(wait=False)
        return result

    def candidates(self, count: int) -> Iterator[tuple[int, int]]:
        """The worker's (absolute offset, line index within the part) records, in file order."""
        fd = self._records.fileno()
        position = 0
        remaining = count
        while remaining > 0:
            batch = min(remaining, RECORDS_PER_READ)
            packed = array("q")
            packed.frombytes(os.pread(fd, batch * 16, position))
            if len(packed) < batch * 2:
                raise OSError("the candidate file of the second process is shorter than it said")
            position += batch * 16
            remaining -= batch
            values = packed.tolist()
            yield from zip(values[0::2], values[1::2], strict=True)

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)
        self._records.close()


def can_split(size: int | None) -> bool:
    if size is None or size < MIN_PARALLEL_BYTES or (os.cpu_count() or 1) < 2:
        return False
    if os.environ.get("ROOTRANK_JOBS") == "1":
        return False
    return "fork" in multiprocessing.get_all_start_methods()
