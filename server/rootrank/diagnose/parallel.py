"""Using the second core for big files: a forked worker finds, numbers and records the candidate lines
of the file's later segments while this process works through the earlier ones.

The file past this process's first chunk is cut into segments at line starts. This process claims
segments from the front, as it reads; the worker claims them from the back; they meet wherever their
speeds make them meet (this process also runs the per-line pipeline, so it is usually the slower one).
The worker runs the very same prefilter (inherited through fork), so the candidates, and therefore the
diagnosis, are identical to a single-process run. It also counts each segment's lines, so this process
never reads or counts the worker's segments: it reads only their candidate lines (and the lines around
them that the pipeline asks for) at their offsets. The candidates go through an unlinked temporary
file, not memory, so a log whose every line is a candidate still costs constant memory. Where fork is
unavailable, or the file is small, everything stays in one process.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from array import array
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

from rootrank.diagnose.parts import MAX_LINE_BYTES, PartSummary
from rootrank.diagnose.prefilter import Prefilter
from rootrank.diagnose.read import LineChunks

if TYPE_CHECKING:
    from concurrent.futures import Future

# multiprocessing, concurrent.futures, mmap and tempfile are imported where a worker is started: most diagnoses (a
# pasted selection, a small file) never start one, and the imports cost a fifth of start-up.

MIN_PARALLEL_BYTES = 64 << 20
# One read of the worker's (READ_BYTES). Where the two processes meet, one waits for the other's last
# segment: at the pure-Python scan's ~150 MB/s a 32 MiB segment left up to 0.2 s of one core idle.
SEGMENT_BYTES = 8 << 20
READ_BYTES = 8 << 20
RECORDS_PER_READ = 1 << 16  # candidate records read back at a time (16 bytes each)
_FIELDS = 4  # per segment, in shared memory: records offset, records, newlines, ends with newline

# Set before forking; read by the worker.
_PREFILTER: Prefilter | None = None
_SHARED: SharedClaims | None = None
_PARENT: int | None = None  # the diagnosing process, which the worker must not outlive




class SharedClaims:
    """Which segment each process takes next, and what the worker found in each; shared across fork."""

    def __init__(self, starts: list[int]) -> None:
        import mmap
        import multiprocessing

        self.starts = starts  # segment k is [starts[k], starts[k + 1]); segment 0 is this process's
        self.count = len(starts) - 1
        self._memory = mmap.mmap(-1, 8 * (2 + _FIELDS * self.count))  # anonymous, shared with the child
        self._values = memoryview(self._memory).cast("q")
        self._values[0] = 1  # the next segment this process may claim
        self._values[1] = self.count - 1  # the next segment the worker may claim
        self._lock: Any = multiprocessing.get_context("fork").Lock()

    def claim_front(self) -> int | None:
        with self._lock:
            front, back = self._values[0], self._values[1]
            if front > back:
                return None
            self._values[0] = front + 1
            return front

    def claim_back(self) -> int | None:
        with self._lock:
            front, back = self._values[0], self._values[1]
            if front > back:
                return None
            self._values[1] = back - 1
            return back

    def first_of_worker(self) -> int:
        """The first segment the worker took (count when it took none); final once both have stopped."""
        with self._lock:
            return int(self._values[0])

    def record(self, segment: int, records_at: int, records: int, newlines: int, ends_with_newline: bool) -> None:
        base = 2 + _FIELDS * segment
        self._values[base: base + _FIELDS] = array("q", [records_at, records, newlines, int(ends_with_newline)])

    def found(self, segment: int) -> tuple[int, int, int, bool]:
        base = 2 + _FIELDS * segment
        records_at, records, newlines, ends = self._values[base: base + _FIELDS].tolist()
        return records_at, records, newlines, bool(ends)

    def close(self) -> None:
        self._values.release()
        self._memory.close()


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


def _segment_starts(path: str, size: int, already_read: int) -> list[int]:
    """Segment starts (line starts) after `already_read`, then `size`; the first is 0."""
    starts = [0]
    nominal = already_read
    while nominal < size:
        start = _line_start_at_or_after(path, nominal)
        if start >= size:
            break
        if start > starts[-1]:
            starts.append(start)
        nominal = max(start, nominal) + SEGMENT_BYTES
    starts.append(size)
    return starts


def _die_with(parent: int) -> None:
    """Have the kernel kill this worker when `parent` goes away (Linux), and leave at once if it already has.
    A worker that outlived a killed diagnosis would hold the log and its unlinked temporary file forever."""
    if sys.platform.startswith("linux"):
        try:
            import ctypes

            libc = ctypes.CDLL(None, use_errno=True)
            libc.prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG
        except (OSError, AttributeError):
            pass  # no prctl: the getppid checks between segments still end it
    if os.getppid() != parent:
        os._exit(1)


def _work(path: str, out_fd: int) -> None:
    """The worker: claim segments from the back until the processes meet (or the parent is gone)."""
    assert _SHARED is not None
    parent = _PARENT
    if parent is not None:
        _die_with(parent)
    written = 0
    while (segment := _SHARED.claim_back()) is not None:
        if parent is not None and os.getppid() != parent:
            os._exit(1)
        start, end = _SHARED.starts[segment], _SHARED.starts[segment + 1]
        records, newlines, ends_with_newline = _scan_segment(path, start, end, out_fd)
        _SHARED.record(segment, written, records, newlines, ends_with_newline)
        written += records


def _scan_segment(path: str, start: int, end: int, out_fd: int) -> tuple[int, int, bool]:
    """Append (offset, line index within the segment) records for the candidate lines of [start, end)."""
    assert _PREFILTER is not None
    lines = 0
    written = 0
    last_byte = b"\n"
    offset = start  # file offset of buf[0]
    with open(path, "rb") as handle:
        handle.seek(start)
        for buf, cut in LineChunks(handle, READ_BYTES, MAX_LINE_BYTES, limit=end - start):
            records = array("q")
            previous = 0
            for line_start in _PREFILTER.candidates(buf, 0, cut):
                lines += buf.count(b"\n", previous, line_start)
                previous = line_start
                records.append(offset + line_start)
                records.append(lines)
            lines += buf.count(b"\n", previous, cut)
            if records:
                os.write(out_fd, records.tobytes())
                written += len(records) // 2
            last_byte = bytes(buf[cut - 1: cut])
            offset += cut
    return written, lines, last_byte == b"\n"


class SplitScan:
    """The worker for one file, and the claims this process makes as it reads."""

    def __init__(self, path: str, size: int, prefilter: Prefilter, already_read: int = 0) -> None:
        import multiprocessing
        import tempfile
        from concurrent.futures import ProcessPoolExecutor

        global _PREFILTER, _SHARED, _PARENT
        self.size = size
        self.claims = SharedClaims(_segment_starts(path, size, already_read))
        self.boundary = size  # where the worker's segments begin; known once both have stopped
        # Closed by close(): the file outlives this call, being written by the worker and read later.
        self._records = tempfile.TemporaryFile(prefix="rootrank-candidates-")  # noqa: SIM115
        _PREFILTER, _SHARED, _PARENT = prefilter, self.claims, os.getpid()
        context = multiprocessing.get_context("fork")
        self._pool = ProcessPoolExecutor(max_workers=1, mp_context=context)
        self._future: Future[None] = self._pool.submit(_work, path, self._records.fileno())
        self._segments: range = range(0)

    @property
    def first_limit(self) -> int:
        """Where this process's first segment ends."""
        return self.claims.starts[1]

    def claim(self) -> int | None:
        """Extend this process's part by the next segment: its end, or None when the worker has it."""
        segment = self.claims.claim_front()
        return None if segment is None else self.claims.starts[segment + 1]

    def summary(self) -> PartSummary:
        """Wait for the worker; then the worker's part is [boundary, size)."""
        self._future.result()
        self._pool.shutdown(wait=False)
        first = self.claims.first_of_worker()
        self._segments = range(first, self.claims.count)
        self.boundary = self.claims.starts[first]
        found = [self.claims.found(k) for k in self._segments]
        return PartSummary(newlines=sum(f[2] for f in found),
                           ends_with_newline=found[-1][3] if found else True)

    def candidates(self) -> Iterator[tuple[int, int]]:
        """The worker's (absolute offset, line index within the part) records, in file order (after
        `summary`)."""
        lines_before = 0
        for segment in self._segments:
            records_at, records, newlines, _ends = self.claims.found(segment)
            for offset, index in self._read_records(records_at, records):
                yield offset, lines_before + index
            lines_before += newlines

    def _read_records(self, position: int, count: int) -> Iterator[tuple[int, int]]:
        fd = self._records.fileno()
        position *= 16
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
        self.claims.close()


def can_split(size: int | None) -> bool:
    if size is None or size < MIN_PARALLEL_BYTES or (os.cpu_count() or 1) < 2:
        return False
    if os.environ.get("ROOTRANK_JOBS") == "1":
        return False
    # Forking a process that runs other threads (a language server, say) can deadlock the child on a
    # lock one of them held: only a single-threaded process forks.
    if threading.active_count() > 1:
        return False
    import multiprocessing

    return "fork" in multiprocessing.get_all_start_methods()
