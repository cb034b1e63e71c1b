"""Lines hard-wrapped at a terminal's width: rows of exactly W characters joined back into the line.

Terminal output copied from a screen (or `tmux capture-pane`, `fold -w`, a CI page of fixed width)
splits every line longer than the width W into rows of exactly W characters, the last row shorter,
with nothing marking the continuation: `torch.OutOfMemoryError: CUDA out of memory. Tried to alloc`
/ `ate 20.00 MiB ...`. A literal split between two rows is invisible to the prefilter and to every
pattern, so wrapped rows are joined into the line they were, before the prefilter looks at them.

A source is taken as wrapped at W only on evidence from its own head (`wrap_width`): W is its
longest line, MIN_WIDTH to MAX_WIDTH characters, no line is longer (a terminal never shows one), the
rows of exactly W are not outnumbered twice over by lines a few characters shorter (natural lengths
spread; wrapped rows pile up at W), and most rows of length W are followed by a line that goes on
with them: it does not start a record (a launcher or logging prefix, a time stamp, a traceback
line, an empty line), does not begin the way the row's record began (the next record of a repeated
format), and the two do not meet as two texts do (`done.` + `Next`). At least MIN_FULL_ROWS such
row-and-continuation pairs must differ (a repeated message that happens to be the longest line is
not a wrap); a single full row is believed only at a width terminals open with, cut with no space on either side.
Then every row of exactly W characters is joined to the next line unless that one starts a record
or begins like the row's record (`Unwrapper`). Logs that are not wrapped pass through untouched;
the join is one linear pass over each chunk, and a joined line ends at MAX_JOINED_BYTES. The joined
line keeps the number of its first row, and the rows it absorbed are still counted as physical
lines (`joins` lists where they were).
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable, Iterator

from rootrank.diagnose.formats.prefixes import PREFIXES

MIN_WIDTH = 60  # narrower than any terminal people run training in
MAX_WIDTH = 1000
MIN_FULL_ROWS = 2
NEAR = 8  # lines this many characters shorter than W: where natural line lengths would also lie
SAMPLE_BYTES = 1 << 20
# A joined line ends here (a blob of full rows, base64 say): a line is never held back from one chunk
# to the next beyond this, so joining stays one linear pass (normalize.py keeps no more of a line).
MAX_JOINED_BYTES = 64 << 10
_ANSI = re.compile(rb"\x1b\[[0-?]*[ -/]*[@-~]")
# Lines that begin a record of their own, beyond the launcher and logger prefixes of prefixes.py.
_RECORD_START = re.compile(
    r"(?:\r?$"  # empty (a row of spaces is what a terminal wraps trailing padding into)
    r"|Traceback \(most recent call last\)|During handling of the above|The above exception was"
    r"|(?<!\s)\s+File \""  # a traceback frame (the lookbehind keeps a search over a run of spaces linear)
    r"|\[?\d{4}-\d\d-\d\d[T ]\d\d:\d\d"  # an ISO time stamp
    r"|\[?\d\d:\d\d:\d\d[.,\]\s]"  # a clock time
    r"|[IWEFVD]\d{4} \d\d:\d\d:\d\d"  # glog (and torch's TORCH_LOGS)
    r"|(?<![\w.-])[\w.-]+:\d+:\d+ \[\d+\] NCCL "  # NCCL's host:pid:tid [device] prefix
    r"|(?:DEBUG|INFO|WARNING|WARN|ERROR|CRITICAL|FATAL)\b"
    r"|\[(?:rank|default)\d{1,6}\]:"
    r"|srun: |slurmstepd: "
    # What the C/C++ runtime prints when a process dies: libstdc++'s terminate handler, CPython's fatal error,
    # the shell's report of a signal.
    r"|terminate called |Fatal Python error: |Segmentation fault|Aborted \(core dumped\))")
SAME_START = 5  # a next line that starts with this many of its record's first characters is a record
_CLOSING = frozenset(bytes([c]) for c in b".!?)]}>'\"`")
_OPENING = frozenset(bytes([c]) for c in b"ABCDEFGHIJKLMNOPQRSTUVWXYZ[{(<")
# The widths terminals, multiplexers and CI pages open with: a single wrapped row is believed only there.
STANDARD_WIDTHS = frozenset({80, 100, 120, 132, 140, 150, 160, 180, 200, 220, 240, 250, 256})
_STRICT_PREFIXES = tuple(p for p in PREFIXES if not p.ambiguous)


def _width(line: bytes) -> int:
    """The characters a terminal shows for a line (CR and escapes take no column)."""
    if line.endswith(b"\r"):
        line = line.rstrip(b"\r")
    if b"\x1b" in line:
        line = _ANSI.sub(b"", line)
    return len(line) if line.isascii() else len(line.decode("utf-8", "replace"))


def starts_record(text: str) -> bool:
    """Whether a line begins a record of its own rather than going on with the row before it."""
    if _RECORD_START.match(text):
        return True
    first = text[:1]
    return any((not p.starts or first in p.starts) and p.regex.match(text) for p in _STRICT_PREFIXES)


def _continues(line: bytes, record: bytes) -> bool:
    """Whether `line` can go on with the record whose first row is `record`: it does not start a
    record of its own, nor begin the way that record began (the next record of a repeated format)."""
    return not (line[:SAME_START] == record[:SAME_START] or starts_record(line.decode("utf-8", "replace")))


_TABLE_EDGE = frozenset((b"|", b"+"))


def _boundary(row: bytes, line: bytes) -> bool:
    """Whether the end of `row` and the start of `line` read as two texts rather than one cut in two:
    a sentence or bracket closing, then a capital or an opening bracket with no space between; or two
    rows of a box-drawn table (`dcgmi diag`, `nvidia-smi`: every row as wide as the table, so a table
    alone looks like rows of a wrap), one ending and the next starting at the table's edge."""
    end = row.rstrip(b"\r")[-1:]
    return ((end in _CLOSING and line[:1] in _OPENING) or (end in _TABLE_EDGE and line[:1] in _TABLE_EDGE)
            or _is_rule(row) or (line[:1] in b" \t" and _FRAME_END.search(row) is not None))


# A Python traceback's frame line, whole: the source line under it is indented (a wrap that cut the frame
# would go on with the rest of its text instead).
_FRAME_END = re.compile(rb'File "[^"]+", line \d+, in [\w<>.]+\r?$')


def _is_rule(row: bytes) -> bool:
    """A border of one repeated sign (or blanks) as wide as the block it frames (torchrun's failure summary
    of torch 1.9-1.10 is framed by rows of `*` and `=` as wide as its widest line): no text was cut there.
    (Trailing blanks alone tell nothing: a column-aligned table wrapped by a terminal cuts rows in a run
    of them.)"""
    row = row.rstrip(b"\r")
    return bool(row) and not row[:1].isalnum() and row.count(row[:1]) == len(row)


def wrap_width(sample: bytes) -> int | None:
    """The width W the sample's lines were wrapped at, or None when they were not (see the module)."""
    lines = sample[:SAMPLE_BYTES].split(b"\n")
    if len(sample) > SAMPLE_BYTES or not sample.endswith(b"\n"):
        lines.pop()  # a row cut by the sample, not by the terminal
    if sample.isascii() and b"\r" not in sample and b"\x1b" not in sample:
        widths = list(map(len, lines))  # one column a byte: measured in C
    else:
        widths = list(map(_width, lines))
    if not widths:
        return None
    width = max(widths)
    if not MIN_WIDTH <= width <= MAX_WIDTH:
        return None
    counts = Counter(widths)
    full = counts[width]
    near = sum(counts[w] for w in range(width - NEAR, width))
    if 2 * full <= near or (full == 1 and width not in STANDARD_WIDTHS):
        return None
    rows: set[bytes] = set()
    evidenced = 0
    # Only the lines after full rows are looked at; each continues the record its row belongs to.
    record_of: dict[int, bytes] = {}  # a line taken as a continuation -> the first row of its record
    for i in [i + 1 for i, w in enumerate(widths[:-1]) if w == width]:
        row, line = lines[i - 1], lines[i]
        record = record_of.get(i - 1, row)
        if _continues(line, record) and not _boundary(row, line):
            record_of[i] = record
            rows.add(row + b"\n" + line)
            if full > 1 or (row.rstrip(b"\r")[-1:] != b" " and line[:1] != b" "):
                evidenced += 1
    # Distinct rows and continuations: a repeated message that is the longest line is not a wrap.
    if full == 1:
        return width if evidenced == 1 else None
    return width if len(rows) >= MIN_FULL_ROWS and 2 * evidenced > full else None


class Unwrapper:
    """Joins the rows of a source wrapped at `width`, chunk by chunk (chunks of whole lines).

    A chunk's last line may go on in the next chunk; while it ends in a full row it is held back and
    put before the next chunk (`flush` gives what is held at the end of the stream).
    """

    def __init__(self, width: int) -> None:
        self.width = width
        self._held = b""

    def join(self, data: bytes | bytearray, final: bool = False) -> tuple[bytes, list[int]]:
        """The chunk with its rows joined, and the offsets in it where a joined row begins (its newline
        was removed). `data` holds whole lines (its last may lack a newline only at the stream's end)."""
        text = self._held + bytes(data)
        self._held = b""
        if not text:
            return b"", []
        lines = text.split(b"\n")
        ends_open = lines[-1] != b""  # the last line has no newline
        if not ends_open:
            lines.pop()
        logical: list[list[bytes]] = []
        full_before = False  # the line before ended in a full row
        joined = 0  # bytes of the line being joined
        for line in lines:
            if full_before and joined < MAX_JOINED_BYTES and _continues(line, logical[-1][0]):
                logical[-1].append(line)
                joined += len(line)
            else:
                logical.append([line])
                joined = len(line)
            full_before = _width(line) == self.width and not _is_rule(line)
        if full_before and not final and not ends_open:
            # The last line may go on in the next chunk: keep its rows for it.
            self._held = b"\n".join(logical.pop()) + b"\n"
        out = bytearray()
        joins: list[int] = []
        for rows in logical:
            out += rows[0].rstrip(b"\r") if len(rows) > 1 else rows[0]
            for i, row in enumerate(rows[1:], start=2):
                joins.append(len(out))
                out += row.rstrip(b"\r") if i < len(rows) else row
            out += b"\n"
        if ends_open and not self._held and out:
            del out[-1:]
        return bytes(out), joins

    def flush(self) -> tuple[bytes, list[int]]:
        """What is held back, joined, at the end of the stream."""
        return self.join(b"", final=True)


def unwrap_chunks(chunks: Iterable[tuple[bytes | bytearray, int]], width: int
                  ) -> Iterator[tuple[bytes, int, list[int]]]:
    """(joined bytes, their length, join offsets) for each (buffer, cut) chunk of a wrapped source."""
    unwrapper = Unwrapper(width)
    for buf, cut in chunks:
        joined, joins = unwrapper.join(buf[:cut])
        if joined:
            yield joined, len(joined), joins
    joined, joins = unwrapper.flush()
    if joined:
        yield joined, len(joined), joins
