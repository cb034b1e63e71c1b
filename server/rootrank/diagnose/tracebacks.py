"""Grouping of multi-line Python tracebacks per printing process, even when ranks interleave line by line.

Each stream (source file + rank/host of the printer) has its own small state machine, so rank 1's
frames never join rank 3's traceback. Chained tracebacks ("During handling of the above exception")
stay in one block, and so does the "Original Traceback" a DataLoader worker's re-raised exception carries; a
few continuation lines after the exception line (multi-line messages) too. A paste cut after a traceback's
header opens its block at the first frame line near the top.

`on_close` hears of each block that can take no more lines (the stream moved on, or went quiet while
MAX_STREAMS others kept printing): the collector then lets a cascade's tracebacks, one per rank, become
bits of a rank set (collect.EventCollector.close_block). The table of streams is bounded the same way: a
stream past its exception line is forgotten, oldest first, once MAX_STREAMS streams are held.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Hashable
from dataclasses import dataclass

CHAIN_MARKERS = (
    "During handling of the above exception, another exception occurred:",
    "The above exception was the direct cause of the following exception:",
)
_RECORD_START = re.compile(r"^(?:\[|[IWEF]\d{4}\s|\d{4}-\d\d-\d\d|INFO|WARNING|ERROR|DEBUG|CRITICAL|\d+it\b|\s*\d+%\|)")
MAX_CONTINUATION = 20
MAX_FRAMES_LINES = 5000
DENSE_WINDOW = 400
MAX_STREAMS = 4096  # streams held at once; past it, the oldest ones past their exception line are closed
# A paste that starts inside a traceback (its header cut off) opens its block at a frame line this near
# the top of the source: the exception line and its continuation lines then name it together.
HEADLESS_WITHIN = 40
_FRAME = re.compile(r'^\s+File "[^"]+", line \d+, in ')
_ENDED = ("after_exception", "after_blank")  # phases in which a block can only end, continue or chain


@dataclass(slots=True)
class _State:
    ignored_next: bool = False  # "Exception ignored in: ..." announced the next traceback
    block: int = 0
    phase: str = "idle"  # idle | frames | after_exception | after_blank | chain
    since: int = 0  # line number where the current phase began (lines in between may be skipped)


class TracebackGrouper:
    def __init__(self) -> None:
        self._states: dict[Hashable, _State] = {}
        self._next_block = 0
        self._open: dict[Hashable, int] = {}  # streams inside a traceback's frames -> header line number
        self._last_number = 0
        self.ignored: set[int] = set()  # blocks Python printed as "Exception ignored in ..." (not raised)
        self.on_close: Callable[[int], None] | None = None  # told each block that can take no more lines
        self._check_at = MAX_STREAMS  # table size at which ended streams are looked for (doubles if none)

    @property
    def inside_traceback(self) -> bool:
        """Some stream is between a traceback header and its exception line: every line may matter
        (frames name the libraries and the collective; the exception line may hold no literal).
        A header whose stream falls silent stops counting after DENSE_WINDOW lines."""
        if self._open:
            horizon = self._last_number - DENSE_WINDOW
            for stream in [s for s, since in self._open.items() if since < horizon]:
                del self._open[stream]
        return bool(self._open)

    def _new_block(self) -> int:
        self._next_block += 1
        return self._next_block

    def assign(self, stream: Hashable, text: str, number: int) -> int:
        """The traceback block this line belongs to, or 0.

        Distances are measured in line numbers, not lines seen, so the grouping is the same whether or
        not the lines in between were handed over (big logs pass only selected lines).
        """
        self._last_number = number
        state = self._states.get(stream)
        if state is None:
            # A stream with no state is idle: only these two lines change that. Idle states are dropped
            # (below), so the table holds the streams inside a traceback, not every rank ever seen.
            if "Traceback (most recent call last)" not in text and "Exception ignored in" not in text:
                if number > HEADLESS_WITHIN or not _FRAME.match(text):
                    return 0
                return self._headless(stream, number)
            state = self._states[stream] = _State()
            if len(self._states) > self._check_at:
                self._forget_ended()
                # streams still inside their frames cannot be closed: then look again once the table doubled
                held = len(self._states)
                self._check_at = MAX_STREAMS if held <= MAX_STREAMS * 3 // 4 else 2 * held
        block = self._assign(state, stream, text, number)
        if state.phase == "idle" and not state.ignored_next:
            del self._states[stream]
        return block

    def _headless(self, stream: Hashable, number: int) -> int:
        """A block opened at a frame line: the paste began after the traceback's header."""
        state = self._states[stream] = _State(block=self._new_block(), phase="frames", since=number)
        self._open[stream] = number
        return state.block

    def _forget_ended(self) -> None:
        """Close the oldest streams that are past their exception line, down to 3/4 of MAX_STREAMS (a
        cascade of a million ranks, each ending its traceback and falling silent, keeps 4096 states)."""
        excess = len(self._states) - MAX_STREAMS * 3 // 4
        ended = [s for s, state in self._states.items() if state.phase in _ENDED][:excess]
        for stream in ended:
            state = self._states.pop(stream)
            self._open.pop(stream, None)
            self._ended(state.block)

    def _ended(self, block: int) -> None:
        if block and self.on_close is not None:
            self.on_close(block)

    def _assign(self, state: _State, stream: Hashable, text: str, number: int) -> int:
        stripped = text.strip()
        if stripped.startswith("Exception ignored in"):
            state.ignored_next = True
            return 0
        if "Traceback (most recent call last)" in stripped:
            # torch's ExceptionWrapper.reraise (DataLoader workers, the pin-memory thread) prints the
            # worker's traceback as part of the re-raised message: "Caught X in DataLoader worker
            # process N." then "Original Traceback (most recent call last):". It is the same failure,
            # so it stays in the block and its innermost error can name it.
            continues = state.phase == "after_exception" and stripped.startswith("Original Traceback")
            if state.phase != "chain" and not continues:
                if state.phase != "idle":
                    self._ended(state.block)  # a new traceback on the same stream ends the last one
                state.block = self._new_block()
                if state.ignored_next:
                    self.ignored.add(state.block)
            state.ignored_next = False
            state.phase, state.since = "frames", number
            self._open[stream] = number
            return state.block
        if state.phase == "idle":
            return 0
        if state.phase == "frames" and number - state.since >= MAX_FRAMES_LINES:
            self._open.pop(stream, None)
        if stripped in CHAIN_MARKERS:
            state.phase = "chain"
            return state.block
        if state.phase == "chain":
            if not stripped:
                return state.block
            return self._close(state)
        if state.phase == "frames":
            if not stripped:
                return state.block
            if (text[:1].isspace() or stripped.startswith(("...", "^"))) and number - state.since < MAX_FRAMES_LINES:
                return state.block
            state.phase, state.since = "after_exception", number
            self._open.pop(stream, None)
            return state.block
        # after_exception: blank lines may precede a chain marker; other lines may continue the message.
        if not stripped:
            state.phase = "after_blank"
            return state.block
        if state.phase == "after_blank":
            return self._close(state)
        if number - state.since <= MAX_CONTINUATION and not _RECORD_START.match(text):
            return state.block
        return self._close(state)

    def _close(self, state: _State) -> int:
        state.phase = "idle"
        self._ended(state.block)
        return 0
