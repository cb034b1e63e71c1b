"""What the line selection (select.py) and the second process that reads the end of a big file
(parallel.py) share: the cap on one line's bytes, the worker's summary of its part, and the protocol
of a split scan. A module below both, so neither imports the other."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

# A line longer than this is kept as its head and tail (a 60 MB single-line dump must not be held whole).
MAX_LINE_BYTES = 8 << 20


@dataclass(frozen=True)
class PartSummary:
    """What the worker found in [boundary, size)."""

    newlines: int  # newline bytes in the part
    ends_with_newline: bool

class Split(Protocol):
    """A second process that scans the end of the file (parallel.SplitScan): this process reads up to
    `first_limit`, then as far as `claim()` lets it; the worker's part is [boundary, size)."""

    boundary: int
    size: int

    @property
    def first_limit(self) -> int: ...

    def claim(self) -> int | None: ...

    def summary(self) -> PartSummary: ...

    def candidates(self) -> Iterator[tuple[int, int]]: ...
