"""The diagnosis of output that is still being written: bytes are handed in as they arrive, and a
snapshot of the diagnosis is published whenever the input goes quiet.

The very same pipeline as a batch run reads the stream (select.py, lines.py, collect.py ...), in a
thread of its own that waits for bytes instead of reading a file: so once the input has ended the
diagnosis is exactly the batch one over the same bytes. Two things differ only while it runs:

- A source's first lines are held back by the scanner to learn its prefix dialect (lines.py); until
  then the snapshot of the first source is a batch diagnosis of its bytes so far (a short job that
  fails at start-up would otherwise show nothing before it ends), while they are under HEAD_BATCH_BYTES.
- The rank census sweeps the stream's head as it arrives (a batch run sweeps its first chunk at once).

`write` never blocks: what the pipeline has not read yet waits in memory, up to `max_pending` bytes;
past that new bytes are dropped and counted (`dropped`), so a job printing faster than the
diagnosis can read is never slowed and memory stays bounded.
"""

from __future__ import annotations

import io
import threading
import time
from collections import deque
from collections.abc import Callable

from rootrank.diagnose import Pipeline
from rootrank.diagnose.select import CENSUS_BYTES, Buffer
from rootrank.library import Library
from rootrank.model import Diagnosis

LIVE_CHUNK_BYTES = 64 << 10  # the C scans of one chunk hold the interpreter lock: keep them short
HEAD_BATCH_BYTES = 1 << 20
# A snapshot costs time in the thread that reads the job's output: never more than a tenth of it.
SNAPSHOT_COST_SHARE = 0.1
MAX_PENDING_BYTES = 256 << 20


class _Feed:
    """The byte stream of one source as the pipeline thread reads it (`readinto`, like a pipe)."""

    def __init__(self, owner: LiveDiagnosis, name: str, path_hint: str | None) -> None:
        self.owner = owner
        self.name = name
        self.path_hint = path_hint
        self.chunks: deque[bytes] = deque()
        self.offset = 0  # bytes of chunks[0] already read
        self.pending = 0
        self.closed = False
        self.cond = owner._cond
        # A read that filled less than asked is followed, within the same fill (read._fill), by another:
        # answering that one with 0 hands what arrived to the selection instead of waiting for more.
        self._partial = False
        self.head = bytearray()  # the first CENSUS_BYTES, for the rank census
        self.head_swept = 0

    def readinto(self, view: memoryview) -> int:
        while True:
            with self.cond:
                if self.chunks:
                    n = self._take(view)
                    self._partial = n < len(view)
                    return n
                if self._partial or self.closed:
                    self._partial = False
                    return 0
            wait = self.owner._idle()
            with self.cond:
                if not self.chunks and not self.closed:
                    self.cond.wait(wait)

    def _take(self, view: memoryview) -> int:
        n = 0
        while self.chunks and n < len(view):
            chunk = self.chunks[0]
            # An offset into the first chunk, not a slice of its rest: a big chunk read in small
            # pieces would otherwise be copied once per piece.
            take = min(len(chunk) - self.offset, len(view) - n)
            view[n: n + take] = memoryview(chunk)[self.offset: self.offset + take]
            if self.offset + take == len(chunk):
                self.chunks.popleft()
                self.offset = 0
            else:
                self.offset += take
            n += take
        self.pending -= n
        room = CENSUS_BYTES - len(self.head)
        if room > 0:
            self.head += view[: min(n, room)]
        return n

    def sweep_head(self, census: Callable[[Buffer, int, int], None], final: bool) -> None:
        """Sweep the head bytes not swept yet: whole lines while the stream runs, all of it at its end
        (the bytes a batch run sweeps in its first chunk)."""
        end = len(self.head) if final else self.head.rfind(b"\n") + 1
        if end > self.head_swept:
            census(self.head, self.head_swept, end)
            self.head_swept = end


class LiveDiagnosis:
    """Feed the output of a running job (one or more sources, one after the other); read `latest`,
    or get `on_update(diagnosis)` calls (from the pipeline's thread) as the diagnosis changes."""

    def __init__(self, library: Library | None = None, on_update: Callable[[Diagnosis], None] | None = None,
                 interval: float = 0.2, max_pending: int = MAX_PENDING_BYTES) -> None:
        self.pipeline = Pipeline(library)
        self.on_update = on_update
        self.interval = interval
        self.max_pending = max_pending
        self.dropped = 0
        self.latest: Diagnosis | None = None
        self.error: BaseException | None = None
        self._cond = threading.Condition()
        self._sources: deque[_Feed | None] = deque()  # None: no more sources
        self._current: _Feed | None = None
        self._feeding: _Feed | None = None  # the source the pipeline reads now
        self._first: _Feed | None = None
        self._consumed = 0  # bytes read by the pipeline since the last snapshot
        self._last_snapshot = 0.0
        self._gap = interval  # the time to leave between snapshots: `interval`, longer if they are costly
        self._final: Diagnosis | None = None
        self._settle: list[threading.Event] = []  # callers of settle() waiting for a current snapshot
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, name="rootrank-live-diagnosis", daemon=True)
        self._thread.start()

    def start_source(self, name: str, path_hint: str | None = None) -> None:
        """Bytes written from now on belong to a new source (the previous one has ended)."""
        feed = _Feed(self, name, path_hint)
        with self._cond:
            if self._current is not None:
                self._current.closed = True
            self._current = feed
            if self._first is None:
                self._first = feed
            self._sources.append(feed)
            self._cond.notify_all()

    def write(self, data: bytes) -> None:
        """Hand over bytes of the current source; returns at once."""
        if not data:
            return
        if self._current is None:
            self.start_source("-")
        with self._cond:
            feed = self._current
            assert feed is not None
            if feed.pending + len(data) > self.max_pending:
                self.dropped += len(data)
                return
            feed.chunks.append(bytes(data))
            feed.pending += len(data)
            self._consumed += len(data)
            self._cond.notify_all()

    def settle(self, timeout: float = 60) -> Diagnosis | None:
        """Wait until the pipeline has read everything handed over, and return the snapshot of it."""
        done = threading.Event()
        with self._cond:
            self._settle.append(done)
            self._cond.notify_all()
        while not done.wait(0.05):
            timeout -= 0.05
            if timeout <= 0 or self._done.is_set():
                break
        return self.latest

    def close(self, timeout: float | None = None) -> Diagnosis | None:
        """End of all input: wait for the pipeline and return the final diagnosis (None on timeout)."""
        with self._cond:
            if self._current is not None:
                self._current.closed = True
            self._sources.append(None)
            self._cond.notify_all()
        self._done.wait(timeout)
        return self._final

    # ------------------------------------------------------------------ the pipeline's thread

    def _run(self) -> None:
        try:
            while True:
                with self._cond:
                    while not self._sources:
                        self._cond.wait()
                    feed = self._sources.popleft()
                if feed is None:
                    break
                self._feed_source(feed)
            self._final = self.pipeline.result()
            self.latest = self._final
            if self.on_update is not None:
                self.on_update(self._final)
        except Exception as exc:  # a bug must not take the watched job's output with it
            self.error = exc
        finally:
            self._done.set()

    def _feed_source(self, feed: _Feed) -> None:
        census = self.pipeline.census.sweep
        calls = 0

        def head_then_tail(buf: Buffer, start: int, end: int) -> None:
            nonlocal calls
            calls += 1
            if calls > 1:  # the first call is the head, which was swept as it arrived
                census(buf, start, end)

        self._feeding = feed
        self.pipeline.feed_stream(feed.name, feed, feed.path_hint, census=head_then_tail,  # type: ignore[arg-type]
                                  chunk_bytes=LIVE_CHUNK_BYTES)
        feed.sweep_head(census, final=True)
        feed.head = bytearray()
        if feed is self._first:
            self._first = None  # its held bytes are no longer needed

    def _idle(self) -> float | None:
        """Called by the pipeline's thread when it has read everything handed over: publish a snapshot
        if something new was read. Returns how long to wait before calling again (None: until bytes come)."""
        with self._cond:
            fresh = self._consumed
            settling, self._settle = self._settle, []
        if settling and not fresh and self.latest is not None:
            for event in settling:
                event.set()
            return None
        if not fresh and not settling:
            return None
        wait = self._last_snapshot + self._gap - time.monotonic()
        if wait > 0 and not settling:
            return wait
        with self._cond:
            self._consumed = 0
        began = self._last_snapshot = time.monotonic()
        feeding = self._feeding
        if feeding is not None:
            feeding.sweep_head(self.pipeline.census.sweep, final=False)
        first = self._first
        if self.pipeline.scanner.probing and first is not None and first is feeding \
                and len(first.head) < min(CENSUS_BYTES, HEAD_BATCH_BYTES):
            snapshot = _batch(bytes(first.head), first.name, first.path_hint, self.pipeline.library)
        else:
            snapshot = self.pipeline.result()
        self._gap = max(self.interval, (time.monotonic() - began) / SNAPSHOT_COST_SHARE)
        self.latest = snapshot
        for event in settling:
            event.set()
        if self.on_update is not None:
            self.on_update(snapshot)
        return None


def _batch(data: bytes, name: str, path_hint: str | None, library: Library) -> Diagnosis:
    pipeline = Pipeline(library)
    pipeline.feed_stream(name, io.BytesIO(data), path_hint)
    return pipeline.result()


class GrowingText:
    """A text that grows at its end (a log still being written, reloaded by an editor): each new version
    that extends the previous one is diagnosed by feeding the live pipeline only the lines added; any
    other change starts over. The last line counts once it has its newline (it may be half written)."""

    def __init__(self, source: str = "-", library: Library | None = None) -> None:
        self.source = source
        self.library = library
        self.live: LiveDiagnosis | None = None
        self.fed = ""
        self.restarts = 0  # how often a change was not an append (for tests and logs)

    def extends(self, text: str) -> bool:
        """True when `text` is the text fed so far with lines added at its end."""
        return self.live is not None and bool(self.fed) and text.startswith(self.fed)

    def feed(self, text: str) -> None:
        """Hand over what `text` adds (all of it, after a change that was not an append); returns at once."""
        if self.live is None or not text.startswith(self.fed):
            self.close()
            self.restarts += 1
            self.live = LiveDiagnosis(self.library, interval=0.0)
            self.live.start_source(self.source)
            self.fed = ""
        cut = text.rfind("\n") + 1
        if cut > len(self.fed):
            self.live.write(text[len(self.fed): cut].encode("utf-8", "replace"))
            self.fed = text[:cut]

    def diagnose(self, text: str, timeout: float = 60) -> Diagnosis | None:
        """The diagnosis of `text`'s whole lines (None if the pipeline did not settle within `timeout`)."""
        self.feed(text)
        assert self.live is not None
        return self.live.settle(timeout)

    def close(self) -> None:
        if self.live is not None:
            self.live.close(timeout=0)
            self.live = None
