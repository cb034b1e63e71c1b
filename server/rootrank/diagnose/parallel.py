"""Using the second core for big files: a forked worker finds the candidate lines of the file's second
part while this process works through the first.

The worker runs the very same prefilter (inherited through fork), so the candidates, and therefore the
diagnosis, are identical to a single-process run. Where fork is unavailable, or the file is small,
everything stays in one process.
"""

from __future__ import annotations

import bisect
import multiprocessing
import os
from array import array
from concurrent.futures import Future, ProcessPoolExecutor

from rootrank.diagnose.prefilter import Prefilter

MIN_PARALLEL_BYTES = 64 << 20
WORKER_SHARE = 0.55  # the main process also reads, counts lines and runs the per-line pipeline
READ_BYTES = 8 << 20

_PREFILTER: Prefilter | None = None  # set before forking; read by the worker


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


def _scan_range(path: str, start: int, end: int) -> bytes:
    """Candidate line starts (absolute offsets) in [start, end), as packed 64-bit integers."""
    assert _PREFILTER is not None
    found = array("q")
    with open(path, "rb") as handle:
        handle.seek(start)
        offset = start
        pending = b""
        while offset < end:
            chunk = handle.read(min(READ_BYTES, end - offset))
            if not chunk:
                break
            offset += len(chunk)
            buf = pending + chunk
            cut = buf.rfind(b"\n") + 1 if offset < end else len(buf)
            if cut == 0:
                pending = buf
                continue
            base = offset - len(buf)
            found.extend(base + s for s in _PREFILTER.candidates(buf, 0, cut))
            pending = buf[cut:]
    return found.tobytes()


class SplitScan:
    """Candidate source for `select_lines`: this process scans [0, boundary), a worker [boundary, size)."""

    def __init__(self, path: str, size: int, prefilter: Prefilter) -> None:
        global _PREFILTER
        self.prefilter = prefilter
        self.boundary = _line_start_at_or_after(path, int(size * (1 - WORKER_SHARE)))
        _PREFILTER = prefilter
        context = multiprocessing.get_context("fork")
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        self._future: Future[bytes] = self._pool.submit(_scan_range, path, self.boundary, size)
        self._worker: list[int] | None = None

    def __call__(self, buf: bytes, end: int, offset: int) -> list[int]:
        local_end = min(end, max(self.boundary - offset, 0))
        mine = self.prefilter.candidates(buf, 0, local_end) if local_end > 0 else []
        if offset + end <= self.boundary:
            return mine
        if self._worker is None:
            packed = array("q")
            packed.frombytes(self._future.result())
            self._worker = packed.tolist()
            self._pool.shutdown(wait=False)
        low = bisect.bisect_left(self._worker, max(offset, self.boundary))
        high = bisect.bisect_left(self._worker, offset + end)
        return mine + [s - offset for s in self._worker[low:high]]

    def close(self) -> None:
        self._pool.shutdown(wait=False, cancel_futures=True)


def can_split(size: int | None) -> bool:
    if size is None or size < MIN_PARALLEL_BYTES or (os.cpu_count() or 1) < 2:
        return False
    if os.environ.get("ROOTRANK_JOBS") == "1":
        return False
    return "fork" in multiprocessing.get_all_start_methods()
