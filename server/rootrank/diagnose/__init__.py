"""The log side of rootrank: read -> normalize -> prefixes/ranks -> tracebacks -> match -> initiator -> report.

`diagnose_text` and `diagnose_paths` run the whole pipeline; each step lives in its own module:
read.py (bytes to lines), normalize.py (escapes, progress bars), formats/ (prefixes, timestamps, per-rank
file names), tracebacks.py (multi-line grouping), launcher.py (torchrun/DeepSpeed/srun accounts),
match.py (library patterns), collect.py (bounded evidence), initiator.py (who started it),
report.py (the Diagnosis).
"""

from __future__ import annotations

import dataclasses
import io
import os
import sys
from collections.abc import Callable, Iterable, Iterator
from typing import BinaryIO, Protocol

from rootrank.diagnose.collect import EventCollector
from rootrank.diagnose.formats.paste import REGEXES as PASTE_REGEXES
from rootrank.diagnose.formats.paste import undecorate
from rootrank.diagnose.formats.prefixes import RankCensus
from rootrank.diagnose.lines import LineScanner, LineShape
from rootrank.diagnose.match import Matcher
from rootrank.diagnose.parallel import SplitScan, can_split
from rootrank.diagnose.parts import Split
from rootrank.diagnose.prefilter import STRUCTURAL_LITERALS, Prefilter
from rootrank.diagnose.read import (
    DECOMPRESSION_ERRORS,
    MAGIC_BYTES,
    InputError,
    Source,
    decompressing,
    expand_paths,
)
from rootrank.diagnose.report import build_diagnosis
from rootrank.diagnose.select import Census, select_lines
from rootrank.diagnose.shapes import ALIKE, digit_classes
from rootrank.diagnose.truncated import may_be_cut, truncated_library
from rootrank.library import Library, LogPattern, load_library
from rootrank.model import Diagnosis, LogLine, Role

__all__ = ["ClosableSplit", "InputError", "Pipeline", "diagnose_paths", "diagnose_text", "match_pasted",
           "prefilter_literals"]


class ClosableSplit(Split, Protocol):
    """A Split (select.py) that holds resources until the stream is done."""

    def close(self) -> None: ...


FOLLOW_LINES = 8
# undecorate's regexes tell no digits apart (else lines of a known shape are matched as any other line).
PASTE_SHAPES = ALIKE if digit_classes(PASTE_REGEXES) == ALIKE else None
LOOSE_PRIORITY = 10  # generic fallback entries (uncaught exception)
Matches = list[tuple[LogPattern, dict[str, str]]]  # how far after its first line a multi-line message's continuation lines are looked for


class Pipeline:
    """One diagnosis: feed it sources, then ask for the result. Reads each line once."""

    def __init__(self, library: Library | None = None) -> None:
        self.library = library or load_library()
        self.scanner = LineScanner()
        self.matcher = Matcher(self.library)
        self.collector = EventCollector(self.library)
        self.census = RankCensus()
        self.physical_lines = 0  # every line of every source, read or skipped
        self._prefilter: Prefilter | None = None
        self._continued = frozenset(p.entry_id for p in self.library.patterns if p.follows)
        # Completion markers (`after:`): which of them each arming pattern arms, and those armed now.
        self._arms: dict[tuple[str, str], tuple[LogPattern, ...]] = {}
        for marker in self.library.patterns:
            for name in marker.after:
                key = (marker.entry_id, name)
                self._arms[key] = (*self._arms.get(key, ()), marker)
        self._armed: dict[LogPattern, None] = {}  # ordered: the library's order
        # Set by a caller that spreads a big file's candidate search elsewhere: (path, size, prefilter,
        # bytes read) -> a Split for the rest of the file, or None to read it all here.
        self.splitter: Callable[[str, int, Prefilter, int], ClosableSplit | None] | None = None
        self._cut_matcher: Matcher | None = None
        # Entries that name a line only loosely: a cut line they match may still say something specific.
        self.loose = frozenset(e.id for e in self.library.entries.values()
                               if e.priority <= LOOSE_PRIORITY or e.role is Role.CONTEXT)
        self.collector.ignored_blocks = self.scanner.tracebacks.ignored
        self.scanner.tracebacks.on_close = self.collector.close_block

    def match_cut(self, text: str) -> Matches:
        """Patterns for a line cut short (built on first need: most logs have no cut lines to ask about)."""
        return self._cut().match(text)

    def prefilter(self, sample: bytes) -> Prefilter:
        """The prefilter, tuned to the first source's bytes (the files of one run look alike, and a run
        of thousands of per-rank files must not rebuild it each time); the matcher follows its anchors."""
        if self._prefilter is None:
            exact, folded = prefilter_literals(self.library)
            self._prefilter = Prefilter(exact, folded, sample)
            self.matcher.use_anchors(self._prefilter.anchors)
        return self._prefilter

    def feed_stream(self, source: str, handle: BinaryIO, path_hint: str | None = None,
                    on_progress: Callable[[int], None] | None = None, path: str | None = None,
                    size: int | None = None, census: Census | None = None,
                    chunk_bytes: int | None = None) -> None:
        """Feed a byte stream; only the lines that can matter reach the per-line pipeline (select.py).
        A big file (`path`, `size`) also gets a second process to find candidate lines (parallel.py).
        `census` replaces the rank census's sweep of the stream's head and tail (a live stream sweeps
        its head as it arrives)."""
        splits: list[SplitScan | ClosableSplit] = []

        def split_for(prefilter: Prefilter, already_read: int) -> Split | None:
            if path is not None and size is not None and self.splitter is not None:
                # Another engine finds the rest's candidates (the fleet's Ray tasks, fleet/onray.py).
                other = self.splitter(path, size, prefilter, already_read)
                if other is not None:
                    splits.append(other)
                return other
            if path is None or size is None or not can_split(size) or already_read >= size // 2:
                return None
            splits.append(SplitScan(path, size, prefilter, already_read))
            return splits[-1]

        selected = select_lines(handle, self.prefilter, lambda: self.scanner.wants_every_line,
                                census or self.census.sweep, on_progress, split_for, chunk_bytes,
                                self.awaited)

        def counted() -> Iterator[tuple[int, str]]:
            self.physical_lines += yield from selected

        try:
            self.feed(source, counted(), path_hint)
        finally:
            for split in splits:
                split.close()

    def awaited(self) -> tuple[bytes, ...]:
        """The literals of the completion markers armed now: the line selection looks for them too."""
        if not self._armed:  # asked before every selected line; almost always nothing is armed
            return ()
        return tuple(marker.literal.encode("utf-8") for marker in self._armed)

    def feed(self, source: str, lines: Iterable[tuple[int, str]], path_hint: str | None = None) -> None:
        """Feed (physical line number, line) pairs of one source."""
        entries = self.library.entries
        collector = self.collector
        match = self.matcher.match
        self.collector.out.sources.append(source)
        continued = self._continued
        cut, loose = self.match_cut, self.loose
        arms, armed = self._arms, self._armed
        pasted = self._pasted
        for line, shape in self.scanner.scan_shaped(source, lines, path_hint):
            order = collector.observe(line, None if shape is None else shape.key)
            if armed:
                for marker, fields in self._completions(line.text):
                    collector.add(line, order, entries[marker.entry_id], fields, marker.name)
            found = match_pasted(match, line.text, cut, loose) if shape is None else pasted(line, shape)
            for pattern, fields in found:
                if pattern.follows and line.number > self.scanner.follow_until:
                    continue
                collector.add(line, order, entries[pattern.entry_id], fields, pattern.name)
                if pattern.follows and fields:
                    collector.continues(line, pattern.entry_id, fields, FOLLOW_LINES)
                if not pattern.follows and pattern.entry_id in continued:
                    self.scanner.follow_until = line.number + FOLLOW_LINES
                    collector.heads[pattern.entry_id] = line.block or (line.source, line.number)
                for marker in arms.get((pattern.entry_id, pattern.name), ()):
                    armed[marker] = None
            if found:
                collector.settle(line)

    def _pasted(self, line: LogLine, shape: LineShape) -> Matches:
        """`match_pasted` for a line of a known shape (lines.py): the text is ASCII and its shape a slice
        of the line's, and what undecorate and may_be_cut say of it is the same for every text of the
        shape (their regexes and tests tell no digits apart), so they are asked once per shape; so is
        whether any pattern can match a text of the shape at all (the matchers' plans for it are empty:
        a launcher table's field lines, say), which spares those lines both matchers."""
        text = line.text
        facts = shape.pasted
        if facts is None:
            facts = shape.pasted = self._shape_facts(text, shape)
        if facts[2]:
            return []
        if not facts[0] or PASTE_SHAPES is None:
            return match_pasted(self.matcher.match, text, self.match_cut, self.loose)
        key = _text_shape(shape)
        encoded = text.encode()
        found = self.matcher.match_shaped(text, encoded, key)
        if facts[1] and all(p.entry_id in self.loose for p, _ in found):
            entries = {pattern.entry_id for pattern, _ in found}
            extra = [(pattern, fields) for pattern, fields in self._cut().match_shaped(text, encoded, key)
                     if pattern.entry_id not in entries]
            found = found + extra if extra else found
        return found

    def _shape_facts(self, text: str, shape: LineShape) -> tuple[bool, bool, bool]:
        """(undecorate leaves the text as it is, the text may be cut short, no pattern matches any text of
        the shape) for a text of the shape."""
        plain = undecorate(text)
        same, cut = plain is text, may_be_cut(plain)
        if not same or PASTE_SHAPES is None:
            return same, cut, False
        key = _text_shape(shape)
        silent = self.matcher.matches_nothing(text, key) and (not cut or self._cut().matches_nothing(text, key))
        return same, cut, silent

    def _cut(self) -> Matcher:
        """The matcher of lines cut short (built on first need)."""
        if self._cut_matcher is None:
            self._cut_matcher = Matcher(truncated_library(self.library))
        return self._cut_matcher

    def _completions(self, text: str) -> Matches:
        """The armed completion markers this line matches (each is disarmed by its first match)."""
        found: Matches = []
        for marker in list(self._armed):
            if marker.literal in text and (m := marker.regex.search(text)) is not None:
                del self._armed[marker]
                found.append((marker, {k: v for k, v in m.groupdict().items() if v is not None}))
        return found

    def result(self) -> Diagnosis:
        """The diagnosis of what was fed so far; feeding may go on (the collected state is not changed)."""
        self.collector.compact()
        collected = self.collector.out
        ranks_seen = collected.ranks_seen | self.census.ranks
        local_ranks_seen = collected.local_ranks_seen
        if not ranks_seen:
            local_ranks_seen = local_ranks_seen | self.census.local_ranks
        snapshot = dataclasses.replace(collected, lines=self.physical_lines, ranks_seen=ranks_seen,
                                       local_ranks_seen=local_ranks_seen, sources=list(collected.sources))
        return build_diagnosis(snapshot, self.scanner.launcher.report, self.library)


def _text_shape(shape: LineShape) -> bytes:
    """The shape of a line's text: its raw line's shape past the prefixes."""
    end = shape.plan.end
    return shape.key[end:] if end else shape.key


def prefilter_literals(library: Library) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """The prefilter's literals, case-sensitive and case-folded. Continuation lines (`follows: true`) are
    found through the line they follow, completion markers (`after:`) by their literal while armed."""
    patterns = [p for p in library.patterns if not p.follows and not p.after]
    return (tuple([p.literal for p in patterns if not p.ignore_case] + list(STRUCTURAL_LITERALS)),
            tuple(p.literal for p in patterns if p.ignore_case))


def match_pasted(match: Callable[[str], Matches], text: str, cut: Callable[[str], Matches] | None = None,
                 loose: frozenset[str] = frozenset()) -> Matches:
    """The patterns a line matches as printed, and as pasted text with its decorations removed
    (`> ` quotes, emphasis, bullets, pytest's `E   `, `ERROR:root:`, Windows paths). `cut` matches
    lines cut short (truncated.py): a cut line matches only where it ends inside a pattern's text, so
    a whole line is never read differently. It is asked when the line matched nothing, or only
    `loose` entries (generic fallbacks, launcher context): a line a specific entry already names is
    read as that entry."""
    found = match(text)
    plain = undecorate(text)
    if plain is not text:
        # The decorated line can match loosely anchored patterns of other entries; the message
        # underneath must still match its own entry, so both readings count (one pattern per entry).
        entries = {pattern.entry_id for pattern, _ in found}
        extra = [(pattern, fields) for pattern, fields in match(plain) if pattern.entry_id not in entries]
        found = found + extra if extra else found
    if cut is not None and all(p.entry_id in loose for p, _ in found) and may_be_cut(plain):
        entries = {pattern.entry_id for pattern, _ in found}
        extra = [(pattern, fields) for pattern, fields in cut(plain) if pattern.entry_id not in entries]
        found = found + extra if extra else found
    return found


def diagnose_text(text: str, source: str = "-", library: Library | None = None) -> Diagnosis:
    """Diagnose a pasted selection, a traceback or a whole log held in memory."""
    pipeline = Pipeline(library)
    data = text.encode("utf-8", "replace")
    pipeline.feed_stream(source, io.BytesIO(data))
    return pipeline.result()


def diagnose_paths(paths: list[str], library: Library | None = None,
                   on_progress: Callable[[int, int], None] | None = None,
                   pipeline: Pipeline | None = None) -> Diagnosis:
    """Diagnose files (several per-rank files of one run count as one run) or "-" for stdin.

    `on_progress(done_bytes, total_bytes)` is called as big inputs are read (total 0 when unknown).
    A caller that wants more than the Diagnosis (the fleet scan: every rank's host) passes its own
    `pipeline`, fresh, and reads it afterwards.
    """
    sources: list[Source] = expand_paths(paths or ["-"])
    pipeline = pipeline or Pipeline(library)
    sizes = [_size(s) for s in sources]
    total = sum(s or 0 for s in sizes)
    done = 0
    for source, size in zip(sources, sizes, strict=False):
        progress = None
        if on_progress is not None:
            base = done
            progress = _offset_progress(on_progress, base, total)
        if source.path is None:
            stdin = sys.stdin.buffer
            head = stdin.peek(MAGIC_BYTES)[:MAGIC_BYTES] if hasattr(stdin, "peek") else b""
            _feed_maybe_compressed(pipeline, "-", stdin, head, None, progress, None, None)
            continue
        try:
            with open(source.path, "rb") as handle:
                head = handle.read(MAGIC_BYTES)
                handle.seek(0)
                _feed_maybe_compressed(pipeline, source.name, handle, head, source.name, progress,
                                       str(source.path), size)
        except IsADirectoryError as exc:
            raise InputError(f"{source.name}: is a directory") from exc
        except OSError as exc:
            raise InputError(f"{source.name}: {exc.strerror or exc}") from exc
        done += size or 0
    return pipeline.result()


def _feed_maybe_compressed(pipeline: Pipeline, name: str, handle: BinaryIO, head: bytes, path_hint: str | None,
                           progress: Callable[[int], None] | None, path: str | None, size: int | None) -> None:
    """Feed a stream, decompressing it as it is read when its first bytes say it is compressed (then it
    is read here alone: the split worker reads raw file offsets)."""
    reader = decompressing(name, handle, head)
    if reader is None:
        pipeline.feed_stream(name, handle, path_hint, progress, path, size)
        return
    try:
        with reader:
            pipeline.feed_stream(name, reader, path_hint, None, None, None)
    except DECOMPRESSION_ERRORS as exc:
        raise InputError(f"{name}: cannot decompress: {exc}") from exc


def _offset_progress(report: Callable[[int, int], None], base: int, total: int) -> Callable[[int], None]:
    return lambda done: report(base + done, total)


def _size(source: Source) -> int | None:
    if source.path is None:
        return None
    try:
        return os.path.getsize(source.path)
    except OSError:
        return None
