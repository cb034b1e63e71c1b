"""Which physical lines of a source get the full per-line pipeline.

Only lines that can matter are decoded and run through it: the first HEAD_LINES of each source
(start-up output, where the prefix dialect is learnt), every line holding a prefilter anchor (any
entry's literal or a structural marker such as a traceback header or a launcher report), and every
line while the pipeline asks for dense input (inside a launcher's error table). Everything else is
only counted; the first and last chunks are also swept by the rank census (who printed at all) in C.

This is the same for a pasted selection and a 10 GiB log, whichever engine finds the anchors, so
every input size and every engine gives the same diagnosis. Line numbers count every physical line.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Generator
from typing import BinaryIO

from rootrank.diagnose.prefilter import Prefilter

HEAD_LINES = 200
CHUNK_BYTES = 8 << 20
# The rank census sweeps the first and the last chunks of a source: every rank prints at start-up, and
# the end is where runs die. Sweeping every chunk would cost as much as the prefilter itself.
CENSUS_HEAD_CHUNKS = 1
CENSUS_TAIL_CHUNKS = 1
CENSUS_BYTES = 4 << 20
MAX_LINE_BYTES = 8 << 20

Census = Callable[[bytes, int, int], None]


def _sample(buf: bytes, end: int, piece: int = 64 << 10, step: int = 512 << 10) -> bytes:
    """Slices spread over the first chunk: start-up output alone is not what the rest of a log looks like."""
    return b"".join(buf[i: min(i + piece, end)] for i in range(0, end, step))


def _decode(raw: bytes) -> str:
    if len(raw) > MAX_LINE_BYTES:
        raw = raw[: MAX_LINE_BYTES // 2] + b" ... " + raw[-MAX_LINE_BYTES // 2:]
    return raw.decode("utf-8", "replace")


CandidateSource = Callable[[bytes, int, int], list[int]]  # (buf, end, absolute offset of buf) -> line starts


def select_lines(handle: BinaryIO, prefilter_for: Callable[[bytes], Prefilter], dense: Callable[[], bool],
                 census: Census, on_progress: Callable[[int], None] | None = None,
                 split_for: Callable[[Prefilter], CandidateSource | None] | None = None,
                 ) -> Generator[tuple[int, str], None, int]:
    """(1-based physical line number, decoded line) for every selected line of the stream; returns the
    number of physical lines.

    `prefilter_for(sample)` builds the prefilter from the first chunk; `census(buf, start, end)` sweeps
    the head and tail chunks. `split_for(prefilter)` may return a candidate source that supplies the
    candidate line starts of each chunk (computed ahead in another process with the same prefilter).
    """
    line_no = 0  # physical lines before buf[0]
    offset = 0
    pending = b""
    prefilter: Prefilter | None = None
    candidate_source: CandidateSource | None = None
    chunk_index = 0
    unswept: deque[tuple[bytes, int]] = deque(maxlen=1)
    while True:
        chunk = handle.read(CHUNK_BYTES)
        buf = pending + chunk if pending else chunk
        if not buf:
            break
        if chunk:
            cut = buf.rfind(b"\n") + 1
            if cut == 0:
                if len(buf) < MAX_LINE_BYTES:
                    pending = buf
                    continue
                cut = len(buf)
        else:
            cut = len(buf)
        pending = buf[cut:]
        if prefilter is None:
            prefilter = prefilter_for(_sample(buf, cut))
            candidate_source = split_for(prefilter) if split_for is not None else None
        if chunk_index < CENSUS_HEAD_CHUNKS:
            census(buf, 0, min(cut, CENSUS_BYTES))
        else:
            unswept.append((buf, cut))
        chunk_index += 1
        if candidate_source is not None:
            candidates = candidate_source(buf, cut, offset)
        else:
            candidates = prefilter.candidates(buf, 0, cut)
        line_no = yield from _select_in(buf, cut, line_no, candidates, dense)
        offset += cut
        if on_progress is not None:
            on_progress(offset)
        if not chunk:
            break
    for buf, cut in list(unswept)[-CENSUS_TAIL_CHUNKS:]:
        census(buf, max(0, cut - CENSUS_BYTES), cut)
    return line_no


def _select_in(buf: bytes, end: int, line_no: int, candidates: list[int],
               dense: Callable[[], bool]) -> Generator[tuple[int, str], None, int]:
    """Yield the selected lines of buf[:end]; return the number of lines counted so far."""
    pos = 0
    number = line_no  # the number of the line that starts at pos, minus one
    index = 0
    while pos < end:
        if number < HEAD_LINES or dense():
            eol = buf.find(b"\n", pos, end)
            eol = end if eol < 0 else eol
            number += 1
            yield number, _decode(buf[pos:eol])
            pos = eol + 1
            continue
        while index < len(candidates) and candidates[index] < pos:
            index += 1
        if index == len(candidates):
            break
        start = candidates[index]
        number += buf.count(b"\n", pos, start)
        eol = buf.find(b"\n", start, end)
        eol = end if eol < 0 else eol
        number += 1
        yield number, _decode(buf[start:eol])
        pos = eol + 1
    if pos < end:
        number += buf.count(b"\n", pos, end)
        if not buf.endswith(b"\n", 0, end):
            number += 1
    return number
