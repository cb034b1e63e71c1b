"""Which physical lines of a source get the full per-line pipeline.

Only lines that can matter are decoded and run through it: the first HEAD_LINES of each source
(start-up output, where the prefix dialect is learnt), every line holding a prefilter anchor (any
entry's literal or a structural marker such as a traceback header or a launcher report), and every
line while the pipeline asks for dense input (inside a launcher's error table). Everything else is
only counted; the first and last chunks are also swept by the rank census (who printed at all) in C.

A source whose head shows rows hard-wrapped at a terminal's width has them joined first
(formats/wrapped.py), so the prefilter and the patterns see each line whole; it keeps the number of
its first row, and line numbers still count every physical row.

This is the same for a pasted selection and a 10 GiB log, whichever engine finds the anchors, so
every input size and every engine gives the same diagnosis. Line numbers count every physical line.
"""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Callable, Generator, Iterator
from itertools import chain
from typing import BinaryIO, cast

from rootrank.diagnose.formats.wrapped import SAMPLE_BYTES, unwrap_chunks, wrap_width
from rootrank.diagnose.parts import MAX_LINE_BYTES, PartSummary, Split
from rootrank.diagnose.prefilter import Prefilter
from rootrank.diagnose.read import LineChunks, ReadsInto, remaining_bytes

LOG = logging.getLogger(__name__)
HEAD_LINES = 200
CHUNK_BYTES = 8 << 20
# The rank census sweeps the first CENSUS_BYTES of a source and its last: every rank prints at start-up,
# and the end is where runs die. Sweeping every chunk would cost as much as the prefilter itself.
CENSUS_BYTES = 4 << 20

Buffer = bytes | bytearray
Census = Callable[[Buffer, int, int], None]


def _sample(buf: Buffer, end: int, piece: int = 64 << 10, step: int = 512 << 10) -> bytes:
    """Slices spread over the first chunk: start-up output alone is not what the rest of a log looks like."""
    return b"".join(buf[i: min(i + piece, end)] for i in range(0, end, step))


def _later_sample(handle: BinaryIO, read: int, size: int | None, piece: int = 256 << 10) -> bytes:
    """Slices of the middle and the end of a file past what was read: a long run's chatter changes
    (checkpoint saves, scheduler debug output, the failure itself) after its first chunk. Whole lines only."""
    if size is None or size <= read + piece:
        return b""
    try:
        fd = handle.fileno()
        slices = [os.pread(fd, piece, at) for at in (read + (size - read) // 2 - piece // 2, size - piece)]
    except (OSError, AttributeError, io.UnsupportedOperation):
        return b""
    return b"".join(s[s.find(b"\n") + 1: s.rfind(b"\n") + 1] for s in slices)


def _decode(raw: Buffer) -> str:
    if len(raw) > MAX_LINE_BYTES:
        raw = raw[: MAX_LINE_BYTES // 2] + b" ... " + raw[-MAX_LINE_BYTES // 2:]
    return raw.decode("utf-8", "replace")




def select_lines(handle: BinaryIO, prefilter_for: Callable[[bytes], Prefilter], dense: Callable[[], bool],
                 census: Census, on_progress: Callable[[int], None] | None = None,
                 split_for: Callable[[Prefilter, int], Split | None] | None = None,
                 chunk_bytes: int | None = None,
                 awaited: Callable[[], tuple[bytes, ...]] = tuple) -> Generator[tuple[int, str], None, int]:
    """(1-based physical line number, decoded line) for every selected line of the stream; returns the
    number of physical lines.

    `prefilter_for(sample)` builds the prefilter from the first chunk; `census(buf, start, end)` sweeps
    the head and tail chunks. `split_for(prefilter, bytes_read)` may start a second process for the rest
    of the file: this one then reads up to its boundary only, and afterwards just the selected lines of
    the rest, found and numbered by the other process with the same prefilter. A stream still being
    written (diagnose/live.py) reads in smaller `chunk_bytes`: the selection does not depend on it.
    `awaited()` names literals the pipeline waits for now (an armed completion marker, whose literal is
    too common for the prefilter): the lines holding them are selected too, while they are awaited.
    """
    chunks = LineChunks(cast(ReadsInto, handle), chunk_bytes or CHUNK_BYTES, MAX_LINE_BYTES, size_hint=remaining_bytes(handle))
    pieces = iter(chunks)
    first = next(pieces, None)
    if first is None:
        return 0
    buf, cut = first
    prefilter = prefilter_for(_sample(buf, cut) + _later_sample(handle, chunks.read, chunks.size_hint))
    width = wrap_width(bytes(buf[:min(cut, SAMPLE_BYTES)]))
    if width is not None:
        # Rows wrapped at a terminal's width are joined before the prefilter looks (formats/wrapped.py);
        # such a source is read here alone (a worker would find candidates in the rows as they are).
        census(buf, 0, min(cut, CENSUS_BYTES))
        return (yield from _select_wrapped(chain([(buf, cut)], pieces), width, prefilter, dense, on_progress,
                                           census, awaited, chunks))
    split = split_for(prefilter, chunks.read) if split_for is not None else None
    if split is not None:
        chunks.limit, chunks.extend = split.first_limit, split.claim
        # The file's end is swept now, while the other process works (the segments each takes adjust
        # to it): swept after the other process is done, it would keep both waiting.
        end = _tail_of(handle.fileno(), split.size)
        census(end, 0, len(end))
    census(buf, 0, min(cut, CENSUS_BYTES))
    line_no = yield from _select_in(buf, cut, 0, prefilter.candidates(buf, 0, cut), dense, awaited)
    if on_progress is not None:
        on_progress(cut)
    # With a worker, the census of the end read the file's last bytes above; without, it takes the last chunk's.
    tail = _Tail() if split is None else None
    line_no, offset = yield from _select_chunks(pieces, prefilter, line_no, cut, dense, on_progress, tail,
                                                not buf.endswith(b"\n", 0, cut), awaited)
    if split is None:
        assert tail is not None
        tail.sweep(census)
        return line_no
    summary = _worker_summary(split)
    if summary is not None:
        line_no = yield from _select_split(handle.fileno(), split, summary, line_no, dense, on_progress, awaited)
    else:
        # The worker failed: read the rest here, exactly as if there had been none.
        rest = LineChunks(cast(ReadsInto, handle), CHUNK_BYTES, MAX_LINE_BYTES, size_hint=remaining_bytes(handle))
        line_no, offset = yield from _select_chunks(iter(rest), prefilter, line_no, offset, dense, on_progress, None,
                                                    awaited=awaited)
    return line_no


def _select_chunks(pieces: Iterator[tuple[bytearray, int]], prefilter: Prefilter, line_no: int, offset: int,
                   dense: Callable[[], bool], on_progress: Callable[[int], None] | None, tail: _Tail | None,
                   open_line: bool = False, awaited: Callable[[], tuple[bytes, ...]] = tuple,
                   ) -> Generator[tuple[int, str], None, tuple[int, int]]:
    """The selected lines of the chunks read here; returns (lines counted, bytes read) so far.
    `open_line`: the chunk before ended inside a line (one longer than MAX_LINE_BYTES)."""
    for buf, cut in pieces:
        if tail is not None:
            tail.keep(buf, cut)
        if open_line:
            line_no -= 1  # this chunk goes on with that line, which is already counted: one physical line
        line_no = yield from _select_in(buf, cut, line_no, prefilter.candidates(buf, 0, cut), dense, awaited)
        open_line = not buf.endswith(b"\n", 0, cut)
        offset += cut
        if on_progress is not None:
            on_progress(offset)
    return line_no, offset


def _select_wrapped(pieces: Iterator[tuple[bytearray, int]], width: int, prefilter: Prefilter,
                    dense: Callable[[], bool], on_progress: Callable[[int], None] | None, census: Census,
                    awaited: Callable[[], tuple[bytes, ...]], chunks: LineChunks,
                    ) -> Generator[tuple[int, str], None, int]:
    """The selected lines of a source wrapped at `width`, its rows joined; returns the physical lines."""
    tail = _Tail()
    line_no = 0
    for joined, end, joins in unwrap_chunks(pieces, width):
        tail.keep(joined, end)
        line_no = yield from _select_in(joined, end, line_no, prefilter.candidates(joined, 0, end), dense,
                                        awaited, joins)
        if on_progress is not None:
            on_progress(chunks.read)
    tail.sweep(census)
    return line_no


class _Tail:
    """The last CENSUS_BYTES of a stream, from its first whole line, for the census once the stream ends
    (copied: a chunk's buffer is reused by the next read). The same bytes `_tail_of` reads from a file."""

    def __init__(self) -> None:
        self._data = bytearray()
        self._cut_before = False  # bytes before the kept ones were dropped: the first line may be partial

    def keep(self, buf: Buffer, cut: int) -> None:
        piece = memoryview(buf)[max(0, cut - CENSUS_BYTES): cut]
        drop = max(0, len(self._data) + len(piece) - CENSUS_BYTES)
        if drop or cut > len(piece):
            self._cut_before = True
        del self._data[:drop]
        self._data += piece

    def sweep(self, census: Census) -> None:
        start = self._data.find(b"\n") + 1 if self._cut_before else 0
        if start < len(self._data):
            census(self._data, start, len(self._data))


def _worker_summary(split: Split) -> PartSummary | None:
    """The worker's summary, or None when it failed (killed for memory, say)."""
    try:
        return split.summary()
    except Exception as error:  # any failure of the worker: this process can still read everything
        LOG.warning("rootrank: the second process failed (%s); reading the rest of the file in this one", error)
        return None


def _tail_of(fd: int, size: int) -> bytes:
    """The last CENSUS_BYTES of a file, from its first whole line."""
    start = max(0, size - CENSUS_BYTES)
    data = os.pread(fd, size - start, start)
    return data[data.find(b"\n") + 1:] if start > 0 else data


class _LineReader:
    """Whole lines of a file at given offsets, through a window that moves forward: small for a lone
    line, doubling while the lines asked for follow each other (a failure cascade, a dense run)."""

    MIN_WINDOW = 4 << 10
    WINDOW = 1 << 20

    def __init__(self, fd: int, size: int) -> None:
        self._fd = fd
        self._size = size
        self._start = 0
        self._data = b""
        self._window = self.MIN_WINDOW

    def line_at(self, offset: int) -> tuple[bytes, int]:
        """The line starting at `offset` (without its newline) and the offset after it."""
        data, rel = self._data, offset - self._start
        if 0 <= rel < len(data):
            eol = data.find(b"\n", rel)
            if eol >= 0:
                return data[rel:eol], self._start + eol + 1
            if self._start + len(data) >= self._size:
                return data[rel:], self._size  # the last line, without a newline
        following = 0 <= rel <= len(data) + self.MIN_WINDOW
        self._window = min(self._window * 2, self.WINDOW) if following else self.MIN_WINDOW
        while True:
            self._start, self._data = offset, os.pread(self._fd, self._window, offset)
            data = self._data
            eol = data.find(b"\n")
            if eol >= 0:
                return data[:eol], offset + eol + 1
            if offset + len(data) >= self._size:
                return data, self._size
            if self._window >= self.WINDOW:
                return self._long_line(offset)
            self._window = min(self._window * 8, self.WINDOW)

    def _long_line(self, offset: int) -> tuple[bytes, int]:
        # Longer than the window: keep its head and its tail (select._decode keeps no more either).
        keep = MAX_LINE_BYTES // 2
        head = b""
        tail = b""
        position = offset
        while position < self._size:
            block = os.pread(self._fd, self.WINDOW, position)
            if not block:
                break
            eol = block.find(b"\n")
            piece = block if eol < 0 else block[:eol]
            if len(head) < keep:
                head += piece[: keep - len(head)]
            tail = (tail + piece)[-keep:]
            position += len(piece)
            if eol >= 0:
                position += 1
                break
        self._start, self._data = position, b""
        length = position - offset
        raw = head if length <= keep else head + b" ... " + tail
        return raw, position


def _first_of(buf: Buffer, literals: tuple[bytes, ...], start: int, end: int) -> int:
    """The offset of the first of the literals in buf[start:end], or -1."""
    hits = [h for h in (buf.find(literal, start, end) for literal in literals) if h >= 0]
    return min(hits) if hits else -1


def _awaited_in_file(fd: int, start: int, stop: int, literals: tuple[bytes, ...],
                     block: int = 1 << 20) -> tuple[int, int] | None:
    """The start of the first line of a file's [start, stop) that holds one of the literals (which hold
    no newline), and the newlines before it from `start`; None when there is none. `start` is a line
    start; blocks are cut at a line end, so that a literal is never split between two of them."""
    keep = max(len(literal) for literal in literals) - 1
    block = max(block, 2 * (keep + 1))  # a block holds a whole literal with room to move on
    newlines = 0
    line_start = start  # where the line that `position` is in starts
    position = start
    while position < stop:
        data = os.pread(fd, min(block, stop - position), position)
        if not data:
            return None
        last = position + len(data) >= stop
        cut = len(data) if last else data.rfind(b"\n") + 1
        if cut == 0:
            cut = max(1, len(data) - keep)  # inside a line longer than a block
        hit = _first_of(data, literals, 0, len(data))
        if hit >= 0:
            newline = data.rfind(b"\n", 0, hit)
            if newline < 0:
                return line_start, newlines
            return position + newline + 1, newlines + data.count(b"\n", 0, newline + 1)
        newlines += data.count(b"\n", 0, cut)
        newline = data.rfind(b"\n", 0, cut)
        if newline >= 0:
            line_start = position + newline + 1
        position += cut
    return None


def _select_split(fd: int, split: Split, summary: PartSummary, line_no: int, dense: Callable[[], bool],
                  on_progress: Callable[[int], None] | None,
                  awaited: Callable[[], tuple[bytes, ...]] = tuple) -> Generator[tuple[int, str], None, int]:
    """The selected lines of [boundary, size), from the other process's numbered candidates; returns the
    number of physical lines of the whole file."""
    reader = _LineReader(fd, split.size)
    base = line_no  # lines before the boundary
    pos = split.boundary
    number = base  # lines before pos
    candidates = split.candidates()
    reported = pos
    record: tuple[int, int] | None = None
    while True:
        # Sequential lines while the pipeline wants every line (or the head of a tiny-lined file).
        while pos < split.size and (number < HEAD_LINES or dense()):
            raw, pos = reader.line_at(pos)
            number += 1
            yield number, _decode(raw)
        if record is None or record[0] < pos:
            record = next((r for r in candidates if r[0] >= pos), None)
        literals = awaited()
        found = _awaited_in_file(fd, pos, split.size if record is None else record[0], literals) \
            if literals and pos < split.size else None
        if found is not None:
            # An awaited literal before the next candidate line (the candidate is kept for later).
            raw, after = reader.line_at(found[0])
            number += found[1] + 1
            pos = after
            yield number, _decode(raw)
            continue
        if record is None:
            break
        candidate, index = record
        raw, pos = reader.line_at(candidate)
        number = base + index + 1
        yield number, _decode(raw)
        if on_progress is not None and pos >= reported + CHUNK_BYTES:
            reported = pos
            on_progress(pos)
    if on_progress is not None:
        on_progress(split.size)
    last_line_open = split.size > split.boundary and not summary.ends_with_newline
    return base + summary.newlines + (1 if last_line_open else 0)


def _select_in(buf: Buffer, end: int, line_no: int, candidates: list[int], dense: Callable[[], bool],
               awaited: Callable[[], tuple[bytes, ...]] = tuple,
               joins: list[int] | None = None) -> Generator[tuple[int, str], None, int]:
    """Yield the selected lines of buf[:end]; return the number of lines counted so far. `joins`: the
    offsets where wrapped rows were joined (formats/wrapped.py), each one physical line more."""
    pos = 0
    number = line_no  # the number of the line that starts at pos, minus one (joined rows not counted)
    index = 0
    joined = 0  # joins before pos
    while pos < end:
        if joins:
            while joined < len(joins) and joins[joined] < pos:
                joined += 1
        if number + joined < HEAD_LINES or dense():
            eol = buf.find(b"\n", pos, end)
            eol = end if eol < 0 else eol
            number += 1
            yield number + joined, _decode(buf[pos:eol])
            pos = eol + 1
            continue
        while index < len(candidates) and candidates[index] < pos:
            index += 1
        start = candidates[index] if index < len(candidates) else end
        literals = awaited()
        if literals:
            # An awaited literal before the next candidate line: its line is the next one selected.
            hit = _first_of(buf, literals, pos, start)
            if hit >= 0:
                newline = buf.rfind(b"\n", pos, hit)
                start = newline + 1 if newline >= 0 else pos
        if start >= end:
            break
        number += buf.count(b"\n", pos, start)
        if joins:
            while joined < len(joins) and joins[joined] < start:
                joined += 1
        eol = buf.find(b"\n", start, end)
        eol = end if eol < 0 else eol
        number += 1
        yield number + joined, _decode(buf[start:eol])
        pos = eol + 1
    if pos < end:
        number += buf.count(b"\n", pos, end)
        if not buf.endswith(b"\n", 0, end):
            number += 1
    return number + (len(joins) if joins else 0)
