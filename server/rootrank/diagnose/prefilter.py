"""Finding the lines worth a full look, at C speed over large byte chunks.

Every log pattern carries a literal that any match contains; so do the structural lines the pipeline
needs (traceback headers, launcher reports). A line without any of them cannot produce an event, so
only lines holding one are decoded and run through the per-line pipeline.

For each literal we pick an *anchor*, a substring that starts with a byte that is rare in this log
(byte frequencies from a sample), and compile the anchors into one byte regex grouped by first byte.
CPython's regex engine then skips ahead with a tight charset loop and rarely stops: the scan runs at
hundreds of MB/s where testing every line in Python runs at a few. The optional Hyperscan engine
(`pip install rootrank[fast]`) finds the same anchors; both select exactly the lines that contain an
anchor, so the results are identical.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Iterator

ANCHOR_LEN = 6
# Lines the pipeline needs even though no entry matches them (traceback structure, launcher reports).
STRUCTURAL_LITERALS = (
    "Traceback (most recent call last)",
    "During handling of the above exception",
    "The above exception was the direct cause",
    "closing signal",
    "failed (exitcode",
    "ChildFailedError",
    "Root Cause (first observed failure)",
    "srun: error:",
    "Process name: [[",
    "Exit code:",
    "distributed_c10d.py",
    "world size",
    "world_size",
    "WORLD_SIZE",
    "MEMBER: ",
    "nranks",
)


def choose_anchor(literal: bytes, frequency: Counter[int]) -> bytes:
    """The substring of `literal` whose first byte is rarest in the sample (ties: earliest)."""
    if len(literal) <= ANCHOR_LEN:
        return literal
    best, best_score = 0, None
    for i in range(len(literal) - ANCHOR_LEN + 1):
        score = frequency[literal[i]]
        if best_score is None or score < best_score:
            best, best_score = i, score
    return literal[best: best + ANCHOR_LEN]


def _fold(data: bytes) -> bytes:
    return data.lower()


class Prefilter:
    """Selects lines containing any literal (case-sensitive ones as given, the others case-folded)."""

    def __init__(self, literals: Iterable[str], folded_literals: Iterable[str] = (), sample: bytes = b"") -> None:
        frequency: Counter[int] = Counter(sample[:1 << 20])
        exact = {lit.encode("utf-8") for lit in literals if lit}
        folded = {lit.lower().encode("utf-8") for lit in folded_literals if lit}
        anchors = {choose_anchor(lit, frequency) for lit in exact}
        folded_anchors = {choose_anchor(lit, frequency) for lit in folded}
        self.anchors = tuple(sorted(anchors))
        self.folded_anchors = tuple(sorted(folded_anchors))
        self._regex = _grouped_regex(self.anchors, re.NOFLAG) if anchors else None
        self._folded_regex = _grouped_regex(self.folded_anchors, re.IGNORECASE) if folded_anchors else None

    def next_candidate(self, buf: bytes, pos: int, end: int) -> int:
        """Offset of the next anchor at or after `pos` (before `end`), or -1."""
        found = -1
        if self._regex is not None:
            m = self._regex.search(buf, pos, end)
            if m:
                found = m.start()
                end = found
        if self._folded_regex is not None:
            m = self._folded_regex.search(buf, pos, end)
            if m:
                found = m.start()
        return found

    def line_matches(self, line: bytes) -> bool:
        return self.next_candidate(line, 0, len(line)) >= 0


def _grouped_regex(anchors: tuple[bytes, ...], flags: int) -> re.Pattern[bytes]:
    # One alternative per first byte keeps the engine's branch short at every stop.
    groups: dict[bytes, list[bytes]] = defaultdict(list)
    for anchor in anchors:
        key = anchor[:1].lower() if flags & re.IGNORECASE else anchor[:1]
        groups[key].append(anchor[1:])
    parts = []
    for first, rests in sorted(groups.items()):
        alternatives = sorted({re.escape(r) for r in rests}, key=len, reverse=True)
        if b"" in {r for r in rests}:
            parts.append(re.escape(first))
        else:
            parts.append(re.escape(first) + b"(?:" + b"|".join(alternatives) + b")")
    return re.compile(b"|".join(parts), flags)


def split_lines(buf: bytes, start: int, end: int) -> Iterator[tuple[int, int]]:
    """(start, end) of each line in buf[start:end], end exclusive and without the newline."""
    pos = start
    while pos < end:
        eol = buf.find(b"\n", pos, end)
        if eol < 0:
            yield pos, end
            return
        yield pos, eol
        pos = eol + 1
