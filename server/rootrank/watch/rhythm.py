"""The job's rhythm, learnt from its own progress lines, and when it has stopped.

A progress line is one a training loop prints as it goes: a step or iteration counter (`step 120`,
`iter: 40`, `global_step=9`), a rate (`3.2 it/s`, `1.4s/it`), a progress bar (`40/1000 [`), a loss
or learning rate (`loss 0.412`, `lr=3e-4`), a heartbeat. Lines that arrive together (every rank
printing the same step) are one tick. The usual interval is the median of the recent ticks' gaps;
a stall is no tick for STALL_FACTOR times that, and at least MIN_STALL seconds, unless the user sets
the threshold (`--stall SECONDS`), which also applies before the rhythm is learnt. Before the first
progress line (imports, start-up, the rendezvous) a stall takes at least MIN_STALL seconds whatever
the threshold: start-up is slow, not stuck, on a loaded machine.

A job printing as fast as it can must not be slowed by this: the pattern runs over the last TAIL_BYTES
of each read only (where the latest step and ranks are); when those hold no progress line, a few plain
substring searches over the rest (memchr speed) find whether any line could be one, and the pattern
looks at that line alone.
"""

from __future__ import annotations

import re
import statistics
import time
from collections import deque
from collections.abc import Callable

STALL_FACTOR = 5.0
MIN_STALL = 60.0
TICK_MERGE = 0.05  # progress lines closer than this are one tick
MIN_INTERVALS = 3  # ticks needed before the rhythm counts as learnt
_PROGRESS = re.compile(
    rb"(?i)(?:\b(?:global[_ ]step|step|iter(?:ation)?|it|epoch|batch)\b\s*[:=#]?\s*\[?(?P<step>\d+)"
    rb"|(?<![\d.])\d+(?:\.\d+)?\s?(?:it/s|s/it|samples/s|tokens/s|tok/s)"  # from a number's start: linear
    rb"|\b\d+/\d+ \["
    rb"|\b(?:loss|lr)\b\s*[:=]?\s*[-+]?(?:\d|nan|inf)"
    rb"|\bheartbeat\b)")
TAIL_BYTES = 2048
LINE_LOOKBACK = 1024
_LITERALS = (b"step", b"Step", b"STEP", b"iter", b"Iter", b"epoch", b"Epoch", b"loss", b"Loss", b"it/s", b"s/it",
             b"samples/s", b"tokens/s", b"tok/s", b"heartbeat", b"Heartbeat", b"lr")
_RANK = re.compile(rb"^\s*(?:\[(?:rank|default)?(\d+)\]:?|(\d+): )|\brank[\s:=]*(\d+)", re.IGNORECASE)


class Rhythm:
    """Feed output bytes (`observe`); ask `stalled()` how long the job has been silent past its threshold."""

    def __init__(self, stall: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.fixed = stall
        self.clock = clock
        self.started = clock()
        self.last_tick: float | None = None
        self.gaps: deque[float] = deque(maxlen=64)
        self.step: int | None = None  # the highest step counter seen
        self.ranks: set[int] = set()  # ranks that printed progress
        self.ticks = 0

    def observe(self, data: bytes) -> None:
        tail = max(0, len(data) - TAIL_BYTES)
        hits = list(_PROGRESS.finditer(data, tail))
        if not hits and tail:
            hits = self._earlier(data, tail)
        if not hits:
            return
        line_start = -1
        for hit in reversed(hits[-64:]):  # the step and the ranks of a long burst are in its last lines
            if hit["step"]:
                step = int(hit["step"])
                if self.step is None or step > self.step:
                    self.step = step
            if hit.start() >= line_start >= 0:
                continue  # a line's rank once, not once per progress word in it
            # The line's start, looked for near the hit only: a search back to the start of a big read
            # for a "\r" it does not hold would cost a scan of the whole read per hit.
            near = max(0, hit.start() - LINE_LOOKBACK)
            start = max(data.rfind(b"\n", near, hit.start()), data.rfind(b"\r", near, hit.start()), near - 1) + 1
            line_start = start
            rank = _RANK.search(data, start, hit.start())
            if rank:
                self.ranks.add(int(rank[1] or rank[2] or rank[3]))
        now = self.clock()
        if self.last_tick is not None:
            gap = now - self.last_tick
            if gap < TICK_MERGE:
                self.last_tick = now
                return
            self.gaps.append(gap)
        self.last_tick = now
        self.ticks += 1

    @staticmethod
    def _earlier(data: bytes, end: int) -> list[re.Match[bytes]]:
        for literal in _LITERALS:
            at = data.rfind(literal, 0, end)
            if at >= 0:
                start = data.rfind(b"\n", 0, at) + 1
                stop = data.find(b"\n", at)
                hits = list(_PROGRESS.finditer(data, start, stop if stop >= 0 else len(data)))
                if hits:
                    return hits
        return []

    @property
    def interval(self) -> float | None:
        """The usual gap between ticks, once learnt."""
        return statistics.median(self.gaps) if len(self.gaps) >= MIN_INTERVALS else None

    @property
    def threshold(self) -> float | None:
        if self.fixed is not None:
            return self.fixed
        interval = self.interval
        return max(MIN_STALL, STALL_FACTOR * interval) if interval is not None else None

    def silent_for(self) -> float:
        return self.clock() - (self.last_tick if self.last_tick is not None else self.started)

    def stalled(self) -> float | None:
        """Seconds without progress when that is past the threshold, else None."""
        threshold = self.threshold
        if threshold is None:
            return None
        if self.last_tick is None:
            threshold = max(threshold, MIN_STALL)
        silent = self.silent_for()
        return silent if silent >= threshold else None

    def describe(self) -> str:
        interval = self.interval
        usual = f"; usual interval {interval:.1f} s" if interval is not None else ""
        threshold = self.threshold or 0.0
        return f"no rank progressed for {self.silent_for():.0f} s (threshold {threshold:.0f} s{usual})"
