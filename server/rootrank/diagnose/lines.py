"""From raw text lines to `LogLine`s: normalise, peel prefixes, find rank/host/time, group tracebacks.

This is the per-line part of the pipeline, streaming: it holds only a small look-ahead buffer per
source (to learn the source's prefix dialect) and a little state per printing process.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from rootrank.diagnose.formats import inline, timestamps
from rootrank.diagnose.formats.inline import rank_span
from rootrank.diagnose.formats.paths import ranks_from_path
from rootrank.diagnose.formats.prefixes import PREFIX_DIGITS, Dialect, PeelPlan, apply_plan, peel, peel_plan
from rootrank.diagnose.formats.timestamps import parse_time, time_span
from rootrank.diagnose.launcher import ARMING_SIGNS, LauncherParser, agent_of, is_quiet
from rootrank.diagnose.normalize import REGEXES as NORMALIZE_REGEXES
from rootrank.diagnose.normalize import split_physical
from rootrank.diagnose.shapes import ALIKE, ShapeMemo, digit_classes
from rootrank.diagnose.tracebacks import TracebackGrouper
from rootrank.model import LogLine

# torch.multiprocessing.spawn re-raises a child's exception with its traceback after this line: N is the
# process index, the rank on a single node (detectron2 and Lightning launch this way). Composer's launcher
# prints a crashed rank's captured output between `----------Begin global rank N STDERR----------` and its
# End line (composer/cli/launcher.py, _print_process_exit_status).
_SPAWN_CHILD = re.compile(r"^(?:-- Process (?P<index>\d{1,6}) terminated with the following error:"
                          r"|-{10}Begin global rank (?P<rank>\d{1,6}) STD(?:ERR|OUT)-{10})")
CHILD_MARKERS = ("-- Process ", "----------Begin global rank ")
# torchrun's own traceback: its entry point, its main, the elastic agent and launcher.
_LAUNCHER_FRAME = re.compile(r'^\s*File "[^"]*(?:[/\\]bin[/\\]torchrun|torch[/\\]distributed[/\\](?:run\.py|launcher[/\\]|elastic[/\\]))')
ADOPT_WINDOW = 3  # lines between a rank-tagged record and the unprefixed traceback it printed
RECENT_BLOCKS = 4096  # traceback blocks followed at once by the rank adoption


class RankAdoption:
    """Unprefixed tracebacks that belong to a rank the lines around them name.

    A `logging` record tagged `[rank3] ...` followed by the traceback `logger.exception` printed
    without the tag; `-- Process 2 terminated with the following error:` before a spawned child's
    traceback. The traceback block takes the rank (and the record's time) of that line.
    """

    def __init__(self) -> None:
        self._last: dict[str, tuple[int, int, float | None]] = {}  # source -> (number, rank, time)
        self._blocks: dict[int, tuple[int, float | None]] = {}
        self._seen_blocks: set[int] = set()

    def tagged(self, source: str, number: int, rank: int, time: float | None) -> None:
        self._last[source] = (number, rank, time)

    def spawn_marker(self, source: str, number: int, text: str) -> None:
        m = _SPAWN_CHILD.match(text)
        if m:
            self._last[source] = (number, int(m["index"] or m["rank"]), None)

    def block_rank(self, source: str, number: int, block: int, text: str = "") -> tuple[int, float | None] | None:
        """The adopted (rank, time) of an unprefixed line's traceback block, if any. A frame of the launcher's
        own code (torchrun's traceback, printed right after the workers' last lines) takes the adoption back:
        that traceback is the launcher's, not the rank's."""
        if not block:
            return None
        if block in self._blocks and _LAUNCHER_FRAME.search(text):
            del self._blocks[block]
            return None
        if block not in self._seen_blocks:
            if len(self._seen_blocks) >= 2 * RECENT_BLOCKS:
                # Block ids grow; a block RECENT_BLOCKS ids older than this one is closed: a day-long job
                # printing a traceback a step must not keep one entry per traceback.
                oldest = block - RECENT_BLOCKS
                self._seen_blocks = {b for b in self._seen_blocks if b > oldest}
                self._blocks = {b: v for b, v in self._blocks.items() if b > oldest}
            self._seen_blocks.add(block)
            last = self._last.get(source)
            if last is not None and 0 < number - last[0] <= ADOPT_WINDOW:
                self._blocks[block] = (last[1], last[2])
        return self._blocks.get(block)


Span = tuple[int, int]
# The digits the rank forms and the stamp regex tell apart: a cascade's lines of one shape (other ranks,
# other times) have their rank and stamp at the same places (shapes.py).
_FACT_DIGITS = digit_classes((*inline.REGEXES, *timestamps.REGEXES))


def _fact_spans(text: str) -> tuple[Span | None, Span | None]:
    """What a text says by itself, as places: the rank it names, its time stamp near the start."""
    return rank_span(text), time_span(text)


# A line's shape with every digit alike: what the splitting into logical lines (normalize.py), the
# prefixes and the launcher's signs see of a line, when none of their regexes tells digits apart.
LINE_SHAPES = ALIKE if ALIKE == PREFIX_DIGITS == digit_classes(NORMALIZE_REGEXES) else None
SHAPES = 1 << 12  # line shapes remembered per source (cleared when full), of lines up to MAX_SHAPE_CHARS
MAX_SHAPE_CHARS = 1024


class LineShape:
    """What every ASCII line of one shape (LINE_SHAPES) has in common, worked out from the first one:
    whether it is one logical line as it is, where its prefixes are, whether the launcher reads it.
    `key` is the shape; `pasted` is the pipeline's own per-shape facts (diagnose/__init__.py)."""

    __slots__ = ("key", "pasted", "plan", "quiet", "whole")

    def __init__(self, line: str, key: bytes, plan: PeelPlan) -> None:
        self.key = key
        self.whole = split_physical(line) == [line]
        self.plan = plan
        self.quiet = is_quiet(line[plan.end:] if plan.end else line)
        self.pasted: tuple[bool, bool, bool] | None = None



class LineScanner:
    """Turns the lines of one or more sources into LogLines; shares launcher and traceback state."""

    def __init__(self) -> None:
        self.launcher = LauncherParser()
        self.tracebacks = TracebackGrouper()
        self.follow_until = 0  # line number up to which a multi-line message's continuation may come
        # True while a source's first lines are held back to learn its prefix dialect: nothing of that
        # source has reached the collector yet (a live diagnosis looks at those lines another way).
        self.probing = False
        self._last_number = 0
        self._fact_spans = ShapeMemo(_FACT_DIGITS, _fact_spans)
        self.adoption = RankAdoption()
        self._sampling = False  # lines are being read ahead to learn the dialect, before anything sees them

    @property
    def wants_every_line(self) -> bool:
        # While lines are read ahead, the launcher parser has not seen them and cannot ask for the lines of
        # a table that starts among them: once a line that arms it is read ahead, every line is taken, so that the result does not depend on how
        # much output came before the table.
        # While the dialect is being learnt, the lines read ahead have not been looked at: a traceback
        # header, a launcher table or a save among them cannot ask for the lines after it yet, so every
        # line is taken until the look-ahead is full (it then ends a few hundred lines into the source).
        return (self.probing or self._sampling or self.launcher.wants_every_line
                or self.tracebacks.inside_traceback or self._last_number < self.follow_until)

    def scan(self, source: str, lines: Iterable[tuple[int, str]], path_hint: str | None = None) -> Iterator[LogLine]:
        """LogLines for (physical number, raw line) pairs, which may be a selection of the source's lines."""
        for line, _shape in self.scan_shaped(source, lines, path_hint):
            yield line

    def scan_shaped(self, source: str, lines: Iterable[tuple[int, str]],
                    path_hint: str | None = None) -> Iterator[tuple[LogLine, LineShape | None]]:
        """The same, each LogLine with its raw line's LineShape (None: a line not worked out per shape)."""
        path_rank, path_local, path_host = ranks_from_path(path_hint) if path_hint else (None, None, None)
        physical = iter(lines)
        dialect_probe = Dialect()
        buffered: list[tuple[int, str]] = []
        self.probing = True
        try:
            # Whole physical lines are read ahead; the first Dialect.SAMPLE logical lines are looked at.
            for number, text in physical:
                for part in split_physical(text):
                    buffered.append((number, part))
                    if len(buffered) <= Dialect.SAMPLE:
                        dialect_probe.observe(part)
                        if not self._sampling and any(sign in part for sign in ARMING_SIGNS):
                            self._sampling = True  # the launcher will arm on this line: its table follows
                if len(buffered) >= Dialect.SAMPLE:
                    break
        finally:
            self._sampling = False
        dialect = dialect_probe.decide()
        self.probing = False
        if path_rank is not None and _names_other_ranks(buffered[:Dialect.SAMPLE], dialect, path_rank):
            # The workers' own "[rankN]:" tags contradict the file name: a node's file named after the
            # node rank (`torchrun --node-rank $RANK > train_rank$RANK.log`, Kubeflow's RANK is the
            # node's), so the name is not the rank of the launcher lines in it.
            path_rank = None

        # Where a line's prefixes are is worked out once per shape of line (the dialect is this source's).
        plan_of = ShapeMemo(PREFIX_DIGITS, lambda line: peel_plan(line, dialect))
        shapes: dict[bytes, LineShape] = {}

        def shape_of(line: str) -> LineShape | None:
            if LINE_SHAPES is None or len(line) > MAX_SHAPE_CHARS or not line.isascii():
                return None
            key = line.encode().translate(LINE_SHAPES)
            shape = shapes.get(key)
            if shape is None:
                if len(shapes) >= SHAPES:
                    shapes.clear()
                shape = shapes[key] = LineShape(line, key, peel_plan(line, dialect))
            return shape

        def all_items() -> Iterator[tuple[int, str, LineShape | None]]:
            for number, part in buffered:
                yield number, part, shape_of(part)
            for number, text in physical:
                shape = shape_of(text)
                if shape is not None and shape.whole:
                    yield number, text, shape  # one logical line as it is (split_physical would say so)
                    continue
                for part in split_physical(text):
                    yield number, part, shape_of(part)

        fact_spans = self._fact_spans
        for number, raw, shape in all_items():
            self._last_number = number
            peeled = apply_plan(raw, plan_of(raw) if shape is None else shape.plan)
            text = peeled.text
            rank = peeled.rank
            if rank is None and "local_rank" not in text:
                # A launcher line naming a local rank ("failed (exitcode: -9) local_rank: 1", its failure
                # table) is the node's agent speaking about its workers: never the rank a file is named after.
                rank = path_rank
            local_rank = peeled.local_rank if peeled.local_rank is not None else path_local
            host = peeled.host or path_host
            stream_rank = rank
            time = peeled.time
            quoted, table_rank = self.launcher.feed(text, number, source, agent_of(host, peeled.pid),
                                                    stream_rank, shape is not None and shape.quiet)
            if quoted:
                rank = table_rank
                # When the launcher printed its table says nothing of which child failed first (a collector's
                # stamp on each entry counts up within one print); the entries' own `time :` fields do.
                time = None
                stream: object = ("launcher-table", source)
            else:
                # What the text says of itself (a table line's own rank and time are the table's, above).
                if rank is None or time is None:
                    named, stamp = fact_spans(text)
                    if rank is None and named is not None:
                        rank = int(text[named[0]: named[1]])
                    if time is None and stamp is not None:
                        time = parse_time(text[stamp[0]: stamp[1]])
                # The stream is the printing process as its prefix tells; a rank named in the message
                # must not split an unprefixed traceback from its own exception line.
                stream = (source, stream_rank, local_rank, host, peeled.pid)
            block = self.tracebacks.assign(stream, text, number)
            if stream_rank is not None:
                if not quoted:
                    self.adoption.tagged(source, number, stream_rank, time)
            elif not quoted and local_rank is None:
                if text.startswith(CHILD_MARKERS):
                    self.adoption.spawn_marker(source, number, text)
                adopted = self.adoption.block_rank(source, number, block, text)
                if adopted is not None:
                    rank = adopted[0] if rank is None else rank
                    time = adopted[1] if time is None else time
            yield LogLine(number=number, text=text, raw=raw, source=source, rank=rank, local_rank=local_rank,
                          host=host, time=time, pid=peeled.pid, block=block, quoted=quoted), shape


def _names_other_ranks(sample: list[tuple[int, str]], dialect: frozenset[str], path_rank: int) -> bool:
    """Whether the sampled lines' rank prefixes name a rank other than the file name's."""
    for _, raw in sample:
        if "rank" in raw or raw[:1] in "0123456789[":
            rank = peel(raw, dialect).rank
            if rank is not None and rank != path_rank:
                return True
    return False
