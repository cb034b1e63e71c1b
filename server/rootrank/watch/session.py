"""One watch: the job's output goes to the live diagnosis and the rhythm; causes, stalls and status
go to a sink (the front end). The same for a job rootrank launched and for files it follows.

- A cause: the moment the live diagnosis has a root cause of severity error that it did not have
  (a new entry or another rank), the sink gets that diagnosis, at most MAX_CAUSE_NOTICES times.
- A stall: no progress past the rhythm's threshold, or a watchdog/timeout line seen while the job
  lives. Every rank's stack is taken (stacks.py), the odd one out named, the stacks written to a file;
  the watch goes on (the job is stopped only with `kill_on_stall`). Progress re-arms it.
"""

from __future__ import annotations

import dataclasses
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from rootrank.diagnose.live import LiveDiagnosis
from rootrank.library import Library
from rootrank.model import Diagnosis
from rootrank.watch import stacks as stacks_mod
from rootrank.watch.records import RankProcess, StallReport, WatchStatus
from rootrank.watch.rhythm import Rhythm

MAX_CAUSE_NOTICES = 5
RANKS_REFRESH = 5.0  # seconds between looks for the job's rank processes
# Entries that mean "a collective has been waiting too long" while the processes still live.
WATCHDOG_RULES = frozenset({"distributed.collective-timeout", "distributed.nccl-watchdog-stuck",
                            "distributed.rank-stalled"})


class Sink(Protocol):
    """Where a watch reports; called from the watch's threads, one call at a time."""

    def cause(self, diagnosis: Diagnosis) -> None: ...

    def stall(self, report: StallReport) -> None: ...

    def status(self, status: WatchStatus) -> None: ...


@dataclass(frozen=True)
class WatchOptions:
    stall: float | None = None  # seconds without progress that make a stall; None: learnt
    kill_on_stall: bool = False
    out_dir: Path | None = None  # stacks and report files; a temporary folder when None
    pyspy: str | None = None
    log: Path | None = None  # a copy of the output as the diagnosis read it


class Budget:
    """How many bytes a second the diagnosis reads when the job floods its output.

    A token bucket: up to BURST_BYTES at once (a failure's dump of every rank's traceback is read whole),
    refilled at RATE_BYTES a second. A job printing less than that is read entirely, so its diagnosis
    is the batch one; past it a stream keeps only its latest lines until the bucket allows them
    (Stream.write), so the diagnosis reads a sample of the flood and always its end."""

    RATE_BYTES = 4 << 20
    BURST_BYTES = 8 << 20
    SAMPLE_TAIL_BYTES = 256 << 10

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self.tokens = float(self.BURST_BYTES)
        self.at = clock()
        self.sampled = 0  # bytes the diagnosis did not read

    def allow(self, size: int) -> bool:
        now = self.clock()
        self.tokens = min(float(self.BURST_BYTES), self.tokens + (now - self.at) * self.RATE_BYTES)
        self.at = now
        if size > self.tokens:
            return False
        self.tokens -= size
        return True


class Feeder(threading.Thread):
    """The job's output on its way to the watch, off the copy path: the pump only queues each read
    (`put`, constant time, never waits); this thread hands the reads to their streams (the rhythm,
    the line cutting, the budget), so the copy loop never waits for them."""

    MAX_QUEUED_BYTES = 256 << 20

    def __init__(self) -> None:
        super().__init__(name="rootrank-feeder", daemon=True)
        self._cond = threading.Condition()
        self._queue: deque[tuple[Stream, bytes]] = deque()
        self._queued = 0
        self._closed = False
        self.dropped = 0
        self.error: BaseException | None = None

    def put(self, stream: Stream, data: bytes) -> None:
        with self._cond:
            if self._queued + len(data) > self.MAX_QUEUED_BYTES:
                self.dropped += len(data)
                return
            self._queue.append((stream, data))
            self._queued += len(data)
            self._cond.notify()

    def sink(self, stream: Stream) -> Callable[[bytes], None]:
        return lambda data: self.put(stream, data)

    def run(self) -> None:
        while True:
            with self._cond:
                while not self._queue and not self._closed:
                    self._cond.wait()
                if not self._queue:
                    return
                batch = list(self._queue)
                self._queue.clear()
                self._queued = 0
            try:
                for stream, data in batch:
                    stream.write(data)
            except Exception as exc:  # the watch broke: the job's output still flows
                self.error = self.error or exc

    def close(self, timeout: float | None = None) -> None:
        """Hand over what is queued, then end."""
        with self._cond:
            self._closed = True
            self._cond.notify()
        self.join(timeout)


class Stream:
    """One output stream of the job (stdout, stderr, a file): whole lines go to the diagnosis, so two
    streams read in turns never mix inside a line."""

    def __init__(self, watch: Watch, live: LiveDiagnosis) -> None:
        self.watch = watch
        self.live = live
        self.carry = b""
        self.held = b""  # the latest whole lines, waiting for the budget (a flood)

    def write(self, data: bytes) -> None:
        self.watch.rhythm.observe(data)
        cut = data.rfind(b"\n") + 1
        if not cut:
            self.carry += data
            if len(self.carry) > 1 << 20:  # a line without end (a progress bar's \r updates): hand it over
                self._forward(b"", self.carry)
                self.carry = b""
            return
        carry, self.carry = self.carry, data[cut:]
        # The carried line's start, then the whole lines of this read (data[:cut]): pieces, not copies.
        self._forward(carry, data, cut)

    def _forward(self, first: bytes, data: bytes, cut: int | None = None) -> None:
        cut = len(data) if cut is None else cut
        budget = self.watch.budget
        size = len(self.held) + len(first) + cut
        if budget is None or budget.allow(size):
            for piece in (self.held, first, data if cut == len(data) else data[:cut]):
                if piece:
                    self.watch._to_diagnosis(self.live, piece)
            self.held = b""
            return
        # Over the budget: keep the latest whole lines (at most SAMPLE_TAIL_BYTES) for later; the rest
        # is not read. Only this read is cut (the held lines and the carry come before it).
        tail = budget.SAMPLE_TAIL_BYTES
        if cut > tail:
            start = data.find(b"\n", cut - tail - 1, cut) + 1
            self.held = data[start:cut] if 0 < start < cut else data[cut - tail:cut]
        else:
            joined = self.held + first + data[:cut]
            start = joined.find(b"\n", max(0, len(joined) - tail - 1)) + 1
            self.held = joined[start:] if 0 < start < len(joined) else joined
        budget.sampled += size - len(self.held)

    def flush(self) -> None:
        if self.held:  # the end of a flood: where its failure shows
            self.watch._to_diagnosis(self.live, self.held)
            self.held = b""
        if self.carry:
            self.watch._to_diagnosis(self.live, self.carry)
            self.carry = b""


class Watch:
    def __init__(self, options: WatchOptions, sink: Sink, find_ranks: Callable[[], list[RankProcess]],
                 kill: Callable[[], None] | None = None, library: Library | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.options = options
        self.sink = sink
        self.find_ranks = find_ranks
        self.kill = kill
        self.library = library
        self.clock = clock
        self.rhythm = Rhythm(options.stall, clock)
        self.budget: Budget | None = None  # set for a launched job, whose output may flood
        self.lives: list[LiveDiagnosis] = []
        self.causes: list[tuple[str, int | None]] = []
        self.stalls: list[StallReport] = []
        self._lock = threading.RLock()
        self._stall_open = False  # a stall was reported and no progress came since
        self._ticks_at_stall = 0
        self._watchdog: str = ""
        self._ranks: list[RankProcess] = []
        self._ranks_at = -RANKS_REFRESH
        self._status: WatchStatus | None = None
        self._log = options.log.open("wb") if options.log else None
        self._out_dir: Path | None = options.out_dir
        self.quiet = False  # no more cause notices (the job is being stopped: its end is no news)
        self.failed: Diagnosis | None = None  # the latest failing live diagnosis

    # ------------------------------------------------------------------ input

    def stream(self, name: str = "-", path_hint: str | None = None, live: LiveDiagnosis | None = None) -> Stream:
        """A stream of output; streams given the same `live` are one source of one diagnosis."""
        if live is None:
            live = LiveDiagnosis(self.library, on_update=self._on_update)
            live.start_source(name, path_hint)
            self.lives.append(live)
        return Stream(self, live)

    def _to_diagnosis(self, live: LiveDiagnosis, data: bytes) -> None:
        live.write(data)
        if self._log is not None:
            with self._lock:
                self._log.write(data)

    def _on_update(self, diagnosis: Diagnosis) -> None:
        root = diagnosis.root_cause
        if any(f.rule in WATCHDOG_RULES for f in diagnosis.findings) and not self._watchdog:
            rule = next(f for f in diagnosis.findings if f.rule in WATCHDOG_RULES)
            self._watchdog = f"{rule.title} (line {rule.line})"
        if root is None or not diagnosis.failed:
            return
        key = (root.rule, root.rank)
        with self._lock:
            self.failed = diagnosis
            if key in self.causes or len(self.causes) >= MAX_CAUSE_NOTICES or self.quiet:
                return
            self.causes.append(key)
            self.sink.cause(diagnosis)

    # ------------------------------------------------------------------ the clock

    def tick(self, alive: bool = True) -> None:
        """Look for a stall and update the status; call it every fraction of a second."""
        if self._stall_open and self.rhythm.ticks > self._ticks_at_stall:
            self._stall_open = False  # it moves again
        if alive and not self._stall_open:
            silent = self.rhythm.stalled()
            reason = ""
            if silent is not None:
                reason = self.rhythm.describe()
            elif self._watchdog:
                reason = f"a collective timed out or hangs: {self._watchdog}"
                self._watchdog = ""
            if reason:
                self._report_stall(reason)
        self._publish_status(alive)

    def ranks(self) -> list[RankProcess]:
        now = self.clock()
        if now - self._ranks_at >= RANKS_REFRESH:
            self._ranks_at = now
            try:
                found = self.find_ranks()
            except OSError:
                found = []
            if found:
                self._ranks = found
        return self._ranks

    def _report_stall(self, reason: str) -> None:
        self._stall_open = True
        self._ticks_at_stall = self.rhythm.ticks
        self._ranks_at = -RANKS_REFRESH
        processes = self.ranks()
        found, raw, problem = stacks_mod.dump_stacks(processes, self.options.pyspy)
        odd, waiting, waiting_in = stacks_mod.odd_ones_out(found)
        path = ""
        if found and not problem:
            path = str(self._write(f"stacks-{len(self.stalls) + 1}.txt",
                                   stacks_mod.stacks_text(found) + "\n\n# py-spy dump, every thread\n\n" + raw))
        report = StallReport(reason=reason, silent_for=self.rhythm.silent_for(), stacks=tuple(found),
                             hung=tuple(odd), waiting=tuple(waiting), waiting_in=waiting_in,
                             verdict=stacks_mod.verdict(odd, waiting, waiting_in) if found and not problem else "",
                             stacks_path=path, problem=problem)
        self.stalls.append(report)
        with self._lock:
            self.sink.stall(report)
        if self.options.kill_on_stall and self.kill is not None:
            self.kill()

    def _publish_status(self, alive: bool, exit_code: int | None = None, state: str | None = None) -> None:
        ranks = len(self._ranks) or len(self.rhythm.ranks)
        step = self.rhythm.step
        if state is None:
            state = "stalled" if self._stall_open else "failed" if self.failed is not None else \
                "running" if alive else "done"
        if state == "stalled" and self.stalls:
            last = self.stalls[-1]
            hung = last.hung[0] if last.hung else None
            where = f" at {hung.user_frame.where}" if hung is not None and hung.user_frame else ""
            who = hung.label if hung is not None else "job"
            text = f"{who} stalled {self.rhythm.silent_for():.0f} s{where}"
        elif state == "failed" and self.failed is not None and self.failed.root_cause is not None:
            root = self.failed.root_cause
            who = f"rank {root.rank}, " if root.rank is not None else ""
            text = f"failed: {who}{root.title}"
        else:
            parts = [f"{ranks} ranks" if ranks else "", f"step {step}" if step is not None else "",
                     "ok" if state == "running" else state]
            text = ", ".join(p for p in parts if p)
        status = WatchStatus(state, ranks, step, text, str(self._out_dir or ""), exit_code)
        if status != self._status:
            self._status = status
            with self._lock:
                self.sink.status(status)

    # ------------------------------------------------------------------ the end

    def finish(self, streams: list[Stream], exit_code: int | None = None, state: str = "done",
               timeout: float = 120) -> Diagnosis | None:
        """The end of the output: the final diagnosis (of the first diagnosis, the job's own output)."""
        for stream in streams:
            stream.flush()
        finals = [live.close(timeout) for live in self.lives]
        if self._log is not None:
            self._log.close()
        final = finals[0] if finals else None
        if final is not None and final.failed:
            self.failed = final
            state = "failed" if state == "done" else state
        self._publish_status(False, exit_code, state)
        return final

    def write_report(self, name: str, text: str) -> Path:
        path = self._write(name, text)
        if self._status is not None and self._status.report != str(self._out_dir):
            # The final status went out before the report existed: an editor's click must find it.
            self._status = dataclasses.replace(self._status, report=str(self._out_dir))
            with self._lock:
                self.sink.status(self._status)
        return path

    def _write(self, name: str, text: str) -> Path:
        if self._out_dir is None:
            self._out_dir = Path(tempfile.gettempdir()) / f"rootrank-watch-{os.getpid()}"
        self._out_dir.mkdir(parents=True, exist_ok=True)
        path = self._out_dir / name
        path.write_text(text, encoding="utf-8")
        return path
