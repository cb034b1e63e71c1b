"""Which physical lines of a source get the full per-line pipeline.

Only lines that can matter are decoded and run through it: the first HEAD_LINES of each source
(start-up output, where the prefix dialect is learnt), every line holding a prefilter anchor (any
entry's literal or a structural marker such as a traceback header or a launcher report), and every
line while the pipeline asks for dense input (inside a launcher's error table). Everything else is
only counted, and swept by the rank census (who printed at all), in C, chunk by chunk.

This is the same for a pasted selection and a 10 GiB log, whichever engine finds the anchors, so
every input size and every engine gives the same diagnosis. Line numbers count every physical line.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import BinaryIO

from rootrank.diagnose.prefilter import Prefilter

HEAD_LINES = 200
CHUNK_BYTES = 8 << 20
MAX_LINE_BYTES = 8 << 20

Census = Callable[[bytes, int, int], None]


def _decode(raw: bytes) -> str:
    if len(raw) > MAX_LINE_BYTES:
        raw = raw[: MAX_LINE_BYTES // 2] + b" ... " + raw[-MAX_LINE_BYTES // 2:]
    return raw.decode("utf-8", "replace")


def select_lines(handle: BinaryIO, prefilter_for: Callable[[bytes], Prefilter], dense: Callable[[], bool],
                 census: Census, on_progress: Callable[[int], None] | None = None) -> Iterator[tuple[int, str]]:
    """(1-based physical line number, decoded line) for every selected line of the stream.

    `prefilter_for(sample)` builds the prefilter from the first chunk; `census(buf, start, end)` sees
    every byte range once.
    """
    line_no = 0  # physical lines before buf[0]
    offset = 0
    pending = b""
    prefilter: Prefilter | None = None
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
            prefilter = prefilter_for(buf[: 1 << 20])
        census(buf, 0, cut)
        yield from _select_in(buf, cut, line_no, prefilter, dense)
        line_no += buf.count(b"\n", 0, cut)
        if cut == len(buf) and not buf.endswith(b"\n"):
            line_no += 1
        offset += cut
        if on_progress is not None:
            on_progress(offset)
        if not chunk:
            break


def _select_in(buf: bytes, end: int, line_no: int, prefilter: Prefilter,
               dense: Callable[[], bool]) -> Iterator[tuple[int, str]]:
    pos = 0
    number = line_no  # the number of the line that starts at pos, minus one
    while pos < end:
        if number < HEAD_LINES or dense():
            eol = buf.find(b"\n", pos, end)
            eol = end if eol < 0 else eol
            number += 1
            yield number, _decode(buf[pos:eol])
            pos = eol + 1
            continue
        hit = prefilter.next_candidate(buf, pos, end)
        if hit < 0:
            return
        start = max(buf.rfind(b"\n", pos, hit) + 1, pos)
        number += buf.count(b"\n", pos, start)
        eol = buf.find(b"\n", hit, end)
        eol = end if eol < 0 else eol
        number += 1
        yield number, _decode(buf[start:eol])
        pos = eol + 1
