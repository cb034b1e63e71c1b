"""Collecting matched events into bounded per-rank evidence: one unit per traceback, counts for repeats.

A traceback can match several entries (a specific message and the generic "uncaught exception" on the
same line); the block is named by its highest-priority entry. Repeated events (a warning printed every
step on every rank) are counted, and only the first few of each (entry, rank) are kept, so memory stays
bounded whatever the log size. Tracebacks too: a job that logs a caught exception every step (a retried
upload, a skipped bad sample) keeps the first KEEP_BLOCKS_PER_RANK_AND_RULE of each (entry, rank); the
blocks past that are followed only while they may still be open (the latest MAX_PARKED_BLOCKS), in case
a later line of one names it by an entry with room left. A cascade (a timeout line from each of a million
ranks) keeps the first FULL_PER_SIGNATURE ranks of each identical line as events and the rest as bits of a
RankGroup, since they tell the initiator nothing the first ones do not but that they suffered; so does a
cascade of tracebacks, one per rank, each decided when its block can take no more lines (close_block). Rank sets
(`ranks_seen`, each entry's ranks, a group's ranks) are `RankSet`s: bits, not ints, past a few thousand.
"""

from __future__ import annotations

import re
from collections import defaultdict, deque
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from rootrank.diagnose import stacks
from rootrank.diagnose.shapes import ALIKE, ShapeMemo, digit_classes
from rootrank.diagnose.tracebacks import CHAIN_MARKERS
from rootrank.library import Entry, Library
from rootrank.model import Event, LogLine, Role, Severity
from rootrank.ranks import MAX_BIT_RANK, RankHosts, RankSet

KEEP_PER_RANK_AND_RULE = 8
KEEP_BLOCKS_PER_RANK_AND_RULE = 64
MAX_PARKED_BLOCKS = 4096
KEPT_LINE_CHARS = 4096  # of an event's line (evidence shows at most 2000)
KEPT_FIELD_CHARS = 1000  # of a captured field (they fill fix texts and messages)
INTERRUPTED_RULE = "process.interrupted"  # its events keep the innermost frame of their traceback
MAX_UNNAMED_BLOCKS = 4096  # open tracebacks followed for the line that ends them (the grouper holds as many)
FULL_PER_SIGNATURE = 64  # ranks kept as whole events per symptom signature; the others as bits (RankGroup)
MAX_PIDS = 1 << 16  # pids mapped to ranks (see Collected.pid_ranks)
MAX_SIGNATURES = 4096  # signatures followed at once: lines that differ per rank (a pid, a host) are not grouped
# The collective a traceback was waiting in, from its c10d frame: `distributed_c10d.py", line 3151, in broadcast`.
_C10D_FRAME = re.compile(r'distributed_c10d\.py", line \d+, in (?P<op>[a-z_]+)')
_C10D_SKIP = {"wrapper", "wait", "_wait", "barrier_wrapper"}
_STACK_DIGITS = digit_classes(stacks.REGEXES)
# Python's warnings module prints `path:lineno: Category: message` (warnings.formatwarning; torch's
# TORCH_WARN comes out the same way): the process said it goes on, so what it says is not an error.
_PYTHON_WARNING = re.compile(r":\d+: [A-Z]\w{0,40}Warning: ")
# A Python logging record at WARNING level of an application's logger: `[WARNING:swift] ...` (ms-swift),
# `2024-05-01 10:00:00 - trainer - WARNING - ...`, loguru's `| WARNING  | ...`: the program logged what it caught
# and went on. torch's own loggers are left out: torchrun's agent logs its report of a failed child this way.
_LOGGED_WARNING = re.compile(r"\[WARNING:(?!torch)[\w.-]{1,64}\]|\s-\s(?!torch)[\w.-]{1,64}\s-\sWARNING\s-\s|\|\sWARNING\s{1,4}\|")
# Dynamo's record of a frame whose compilation failed under `torch._dynamo.config.suppress_errors`: logged at
# W level by convert_frame.py, after which the frame runs eagerly and the run goes on.
_DYNAMO_SUPPRESSED = re.compile(r"W\d{4} [\d:.]+ +\d+ \S*_dynamo[/\\]convert_frame\.py:\d+\]")
ROLE_WEIGHT = {Role.CAUSE: 2, Role.SYMPTOM: 1, Role.CONTEXT: 0}


@dataclass
class RuleCount:
    count: int = 0
    first: Event | None = None
    last: Event | None = None  # the state at the end of the run (the last save message, say)
    ranks: RankSet = field(default_factory=RankSet)


@dataclass
class RankGroup:
    """The ranks that printed the same symptom line (same entry, pattern, source and captured fields but the
    rank) after the first FULL_PER_SIGNATURE of them. Those first are events in `units`; the others are bits
    here, with `event` the first of them, so a cascade of a million ranks costs bits, not events. They decide nothing
    the first ones do not (same fields), but they count as ranks that suffered."""

    event: Event
    ranks: RankSet = field(default_factory=RankSet)


@dataclass
class Collected:
    """Everything the initiator and the report need, after one pass over the log."""

    units: list[Event] = field(default_factory=list)  # block winners and stand-alone events, in order
    counts: dict[str, RuleCount] = field(default_factory=lambda: defaultdict(RuleCount))
    ranks_seen: RankSet = field(default_factory=RankSet)
    local_ranks_seen: set[int] = field(default_factory=set)
    hosts: RankHosts = field(default_factory=RankHosts)
    # pid -> rank, from lines whose prefixes name both (Ray's "(RayTrainWorker pid=835, ip=...) [rank1]: ...");
    # a pid seen with two ranks maps to None (the prefix's pid was not the rank's process). At most MAX_PIDS
    # pids: a million Ray workers' pids would cost 100 MiB, and a pid only helps when a message names it.
    pid_ranks: dict[int, int | None] = field(default_factory=dict)
    stacks: set[str] = field(default_factory=set)
    groups: list[RankGroup] = field(default_factory=list)  # symptom lines of many ranks, past the first ones
    lines: int = 0  # physical lines of all sources (set by the pipeline)
    # The newest rank's first line: (rank, line number, characters past its prefix). A rank whose first line is
    # a paste's last, cut short after its prefix, printed nothing the log shows.
    newest_rank_start: tuple[int, int, int] | None = None
    sources: list[str] = field(default_factory=list)
    # The newest traceback when no event names it: its exception line (or its last frame, where the paste
    # ends inside the frames) and that line's order; None when an event named that traceback.
    unexplained_traceback: tuple[LogLine, int] | None = None
    unexplained_header: LogLine | None = None  # that traceback's first line
    unexplained_ranks: RankSet = field(default_factory=RankSet)  # ranks that printed a traceback no event names


def grouped_ranks(collected: Collected, keep: Callable[[Event], bool]) -> RankSet:
    """The ranks of every RankGroup whose first event `keep` accepts (the others are units already)."""
    out = RankSet()
    for group in collected.groups:
        if keep(group.event):
            out |= group.ranks
    return out


def _strength(event: Event, entry: Entry) -> tuple[int, int, int, int]:
    """Which event names a traceback block: the strongest entry, then its role; between equals, a line that
    states the exception over a frame or the source line a frame echoes (`raise ValueError("...")` above
    `ValueError: ...`: the same words, but only the latter is what was raised); then the earliest."""
    return (entry.priority, ROLE_WEIGHT[event.role], int(not is_frame_line(event)), -event.order)


def is_frame_line(event: Event) -> bool:
    """A traceback's frame line or the source line under it: matched by a frame pattern, or indented (the
    exception line that ends a Python traceback is not; in a block indented as a whole, a launcher table's
    `traceback :` field, every line is, and the earliest still wins)."""
    return "frame" in event.pattern or event.line.text[:1].isspace()


@dataclass(slots=True)
class _Unnamed:
    """An open traceback no event has named yet: its first line (whose rank printed it), and its last
    unindented line past the header with that line's order."""

    first: LogLine
    statement: tuple[LogLine, int] | None = None


class EventCollector:
    def __init__(self, library: Library) -> None:
        self.library = library
        self.out = Collected()
        self._blocks: dict[object, Event] = {}  # unit (block id, or (source, line)) -> its strongest event
        self._block_index: dict[object, int] = {}  # unit -> index in units
        self._kept: dict[tuple[str, int | None], int] = defaultdict(int)
        self._kept_blocks: dict[tuple[str, int | None], int] = defaultdict(int)
        self._parked: deque[object] = deque()  # blocks past their cap, latest last
        self._block_op: dict[int, str] = {}
        self._frames: dict[int, tuple[LogLine, int]] = {}  # open traceback block -> its last `File "..."` line
        # Open traceback blocks no event has named yet, and the newest line that ended a closed one of them
        # (Collected.unexplained_traceback, unexplained_ranks).
        self._unnamed: dict[int, _Unnamed] = {}
        self._named: set[int] = set()
        self._closed_unnamed: tuple[LogLine, int] | None = None
        self._closed_unnamed_header: LogLine | None = None
        self.ignored_blocks: set[int] = set()  # shared with the traceback grouper
        self._order = 0
        self._signatures: dict[tuple[object, ...], int | RankGroup] = {}  # -> ranks kept whole, then the group
        self._last_kept: tuple[object, tuple[str, int | None]] | None = None  # the newest stand-alone unit
        self._holes = 0  # units that close_block moved into a RankGroup, not yet squeezed out (compact)
        # Per entry, the unit (block, or (source, line)) of the newest line continuation lines (`follows`) go with.
        self.heads: dict[str, int | tuple[str, int]] = {}
        # A cascade's lines show the same stacks per shape (other ranks, other pids): looked for once.
        self._stacks_in = ShapeMemo(_STACK_DIGITS, stacks.stacks_in)

    def observe(self, line: LogLine, shape: bytes | None = None) -> int:
        """Record a line's rank and stack hints; returns its order in the merged stream. `shape`: the raw
        line's shape with every digit alike (shapes.ALIKE), when the caller has it."""
        self._order += 1
        out = self.out
        if line.rank is not None and not line.quoted:
            if line.rank not in out.ranks_seen.small:  # the common case at C speed (see RankSet.small)
                if line.rank not in out.ranks_seen:
                    out.newest_rank_start = (line.rank, line.number, len(line.text))
                out.ranks_seen.add(line.rank)
            if line.host:
                out.hosts.add(line.rank, line.host)
            if line.pid is not None and out.pid_ranks.get(line.pid, line.rank) != line.rank:
                out.pid_ranks[line.pid] = None
            elif line.pid is not None and (line.pid in out.pid_ranks or len(out.pid_ranks) < MAX_PIDS):
                out.pid_ranks[line.pid] = line.rank
        elif line.local_rank is not None and not line.quoted:
            out.local_ranks_seen.add(line.local_rank)
        if "/" in line.raw or "(" in line.raw:
            if shape is not None and _STACK_DIGITS == ALIKE:
                out.stacks |= self._stacks_in.shaped(line.raw, shape)
            else:
                out.stacks |= self._stacks_in(line.raw)
        if line.block:
            self._follow_traceback(line)
        if line.block and "distributed_c10d.py" in line.text:
            m = _C10D_FRAME.search(line.text)
            if m and m["op"] not in _C10D_SKIP:
                self._block_op[line.block] = m["op"].replace("_", "").upper()
        return self._order

    def _follow_traceback(self, line: LogLine) -> None:
        """Where a traceback block has got to: its last frame, and for one no event named yet, the line that
        ends it so far (its last unindented line past the header)."""
        block, text = line.block, line.text
        if block in self.ignored_blocks:  # "Exception ignored in": printed, never raised
            return
        indented = text[:1].isspace()
        if indented and text.lstrip().startswith('File "'):  # the frame, not its source line or ^^^ markers
            self._frames[block] = (line, self._order)
        if block in self._named:
            return
        unnamed = self._unnamed.get(block)
        if unnamed is None:
            if len(self._unnamed) >= MAX_UNNAMED_BLOCKS:
                return
            unnamed = self._unnamed[block] = _Unnamed(line)
        if (not indented and text.strip() and "Traceback (most recent call last)" not in text
                and text.strip() not in CHAIN_MARKERS):
            unnamed.statement = (line, self._order)

    def _unnamed_end(self, block: int, unnamed: _Unnamed) -> tuple[LogLine, int] | None:
        """The line an unnamed traceback ends with so far: its statement, else its last frame."""
        return unnamed.statement or self._frames.get(block)

    def add(self, line: LogLine, order: int, entry: Entry, fields: dict[str, str], pattern: str) -> None:
        if line.block and line.block in self.ignored_blocks and entry.role is Role.CAUSE:
            # Python printed this exception as "Exception ignored in ..." (a __del__ at exit, say): it
            # was never raised, so it cannot have ended the run.
            return
        if line.block and entry.role is not Role.CONTEXT and line.block not in self._named:
            self._named.add(line.block)
            self._unnamed.pop(line.block, None)
        rank = line.rank
        if fields.get("rank") is not None and rank is None:
            rank = int(fields["rank"])
        if rank is not None and rank != line.rank:
            line = _with_rank(line, rank)
        if len(line.raw) > KEPT_LINE_CHARS or len(line.text) > KEPT_LINE_CHARS:
            line = _shortened(line)
        if fields and max(map(len, fields.values())) > KEPT_FIELD_CHARS:
            fields = {k: v[:KEPT_FIELD_CHARS] for k, v in fields.items()}
        if line.block in self._block_op and "optype" not in fields and entry.role is Role.SYMPTOM:
            fields = {**fields, "optype": self._block_op[line.block]}
        if entry.id == INTERRUPTED_RULE and line.block in self._frames:
            # Where the process was when it was interrupted: the evidence of a hang someone stopped.
            fields = {**fields, "innermost": self._frames[line.block][0].text.strip()[:KEPT_FIELD_CHARS]}
        severity = entry.severity
        if severity is Severity.ERROR and (pattern in entry.healthy_too
                                           or ("Warning: " in line.text and pattern not in entry.warned_on_failure
                                               and _PYTHON_WARNING.search(line.text))
                                           or ("WARNING" in line.text and _LOGGED_WARNING.search(line.text))
                                           or ("convert_frame" in line.raw and _DYNAMO_SUPPRESSED.search(line.raw))):
            severity = Severity.WARNING
        event = Event(rule=entry.id, role=entry.role, severity=severity, line=line, fields=fields,
                      pattern=pattern, order=order)
        count = self.out.counts[entry.id]
        count.count += 1
        if count.first is None:
            count.first = event
        count.last = event
        if rank is not None and rank not in count.ranks.small:
            count.ranks.add(rank)
        # A traceback is one unit; so is a single line that several entries match.
        unit: int | tuple[str, int] = line.block or (line.source, line.number)
        best = self._blocks.get(unit)
        if best is not None:
            if _strength(event, entry) > _strength(best, self.library.entries[best.rule]):
                self._blocks[unit] = event = _raised(event, best)
                index = self._block_index.get(unit)
                if index is not None:
                    self.out.units[index] = event
                else:
                    self._keep_block(unit, event)
            elif (raised := _raised(best, event)) is not best:
                self._blocks[unit] = raised
                index = self._block_index.get(unit)
                if index is not None:
                    self.out.units[index] = raised
            return
        if line.block:
            self._blocks[unit] = event
            self._keep_block(unit, event)
            return
        key = (entry.id, rank)
        self._kept[key] += 1
        if self._kept[key] <= KEEP_PER_RANK_AND_RULE:
            self._last_kept = (unit, key)
            self._blocks[unit] = event
            self._block_index[unit] = len(self.out.units)
            self.out.units.append(event)

    def continues(self, line: LogLine, rule: str, fields: dict[str, str], within: int) -> None:
        """A continuation line (`follows`) of a message whose first line (`heads`, the newest line of the
        same entry that continuation lines follow) is a unit of the same source at most `within` lines
        above: its fields (the recompile limit's `last reason`, an actor's exit detail) join that event's,
        which the report reads."""
        unit = self.heads.get(rule)
        index = None if unit is None else self._block_index.get(unit)
        if unit is None or index is None:
            return
        event = self.out.units[index]
        if (event is None or event.rule != rule or event.line.source != line.source
                or not 0 < line.number - event.line.number <= within):
            return
        extra = {k: v[:KEPT_FIELD_CHARS] for k, v in fields.items() if k not in event.fields}
        if not extra:
            return
        merged = replace(event, fields={**event.fields, **extra})
        self.out.units[index] = merged
        self._blocks[unit] = merged
        count = self.out.counts[rule]
        if count.first is event:
            count.first = merged

    def settle(self, line: LogLine) -> None:
        """Called after every match of a line was added: a stand-alone symptom line whose signature already
        has FULL_PER_SIGNATURE ranks kept whole leaves `units` for its RankGroup (decided here, not in add,
        because a later match of the same line may name it by another entry)."""
        if line.block or line.quoted or self._last_kept is None:
            return
        unit, key = self._last_kept
        if unit != (line.source, line.number) or self._block_index.get(unit) != len(self.out.units) - 1:
            return
        if not self._joins_group(self.out.units[-1]):
            return
        self.out.units.pop()
        del self._blocks[unit], self._block_index[unit]
        self._last_kept = None
        _release(self._kept, key)

    def close_block(self, block: int) -> None:
        """The traceback grouper's word that `block` takes no more lines: its bookkeeping goes, and a symptom
        block whose signature already has FULL_PER_SIGNATURE ranks kept whole leaves `units` for its
        RankGroup, as a stand-alone line does in `settle` (a million ranks' tracebacks cost bits). Its place
        in `units` is a hole until `compact` (called before anyone reads the units)."""
        self._block_op.pop(block, None)
        self._named.discard(block)
        unnamed = self._unnamed.pop(block, None)
        if unnamed is not None:
            end = self._unnamed_end(block, unnamed)
            if end is not None and (self._closed_unnamed is None or end[1] > self._closed_unnamed[1]):
                self._closed_unnamed, self._closed_unnamed_header = end, unnamed.first
            if unnamed.first.rank is not None:
                self.out.unexplained_ranks.add(unnamed.first.rank)  # even a header alone: a traceback of its own
        self._frames.pop(block, None)
        event = self._blocks.pop(block, None)
        index = self._block_index.pop(block, None)
        if event is None or index is None or block in self.ignored_blocks or not self._joins_group(event):
            return
        self.out.units[index] = None  # type: ignore[call-overload]  # a hole: compact() squeezes it out
        self._holes += 1
        _release(self._kept_blocks, (event.rule, event.line.rank))
        if self._holes > 4096 and self._holes * 2 > len(self.out.units):
            self.compact()

    def compact(self) -> None:
        """Squeeze out the holes close_block left in `units`; the indices of open blocks move with them. Also
        brings the tracebacks no event named up to date (Collected.unexplained_traceback, unexplained_ranks)."""
        newest, header = self._closed_unnamed, self._closed_unnamed_header
        for block, unnamed in self._unnamed.items():
            if unnamed.first.rank is not None:
                self.out.unexplained_ranks.add(unnamed.first.rank)
            end = self._unnamed_end(block, unnamed)
            if end is not None and (newest is None or end[1] > newest[1]):
                newest, header = end, unnamed.first
        self.out.unexplained_traceback = newest
        self.out.unexplained_header = header if newest is not None else None
        if not self._holes:
            return
        units = self.out.units
        moved: list[int] = []  # old index -> new index
        kept: list[Event] = []
        for unit in units:
            moved.append(len(kept))
            if unit is not None:
                kept.append(unit)
        for key, old in self._block_index.items():
            self._block_index[key] = moved[old]
        units[:] = kept
        self._holes = 0

    def _joins_group(self, event: Event) -> bool:
        """True when a kept symptom event of one rank joined its signature's RankGroup (so it leaves `units`)."""
        rank = event.line.rank
        if event.role is not Role.SYMPTOM or event.line.quoted or rank is None or not 0 <= rank < MAX_BIT_RANK:
            return False
        signature = (event.rule, event.pattern, event.line.source, event.severity,
                     *sorted((k, v) for k, v in event.fields.items() if k != "rank"))
        held = self._signatures.get(signature)
        if held is None:
            if len(self._signatures) < MAX_SIGNATURES:
                self._signatures[signature] = 1
            return False
        if isinstance(held, RankGroup):
            held.ranks.add(rank)
            return True
        if held < FULL_PER_SIGNATURE:
            self._signatures[signature] = held + 1
            return False
        group = RankGroup(event)
        group.ranks.add(rank)
        self._signatures[signature] = group
        self.out.groups.append(group)
        return True

    def _keep_block(self, unit: object, event: Event) -> None:
        """A block named by `event` goes into units if its (entry, rank) has room; else it is parked.
        A parked block that a stronger line names later comes here again: appended then, it stays in
        order (that line is the latest one)."""
        key = (event.rule, event.line.rank)
        if self._kept_blocks[key] < KEEP_BLOCKS_PER_RANK_AND_RULE:
            self._kept_blocks[key] += 1
            self._block_index[unit] = len(self.out.units)
            self.out.units.append(event)
            return
        self._parked.append(unit)
        if len(self._parked) > MAX_PARKED_BLOCKS:
            old = self._parked.popleft()
            if old not in self._block_index:
                self._blocks.pop(old, None)


def _release(kept: dict[tuple[str, int | None], int], key: tuple[str, int | None]) -> None:
    """One kept unit of `key` left `units`: count it out (and forget the key at zero)."""
    kept[key] -= 1
    if kept[key] <= 0:
        del kept[key]


def _raised(kept: Event, other: Event) -> Event:
    """`kept`, named by a warning-level entry, as an error when the very line it matched is also an error cause
    (an uncaught exception's own line): the entry knows the exception's meaning, and the exception ended the run
    (transformers' "can't both be set" ValueError, named by checkpoint.fsdp-double-checkpoint, a warning entry)."""
    if (kept.role is Role.CAUSE and kept.severity is not Severity.ERROR and is_error_cause(other)
            and other.line.number == kept.line.number and other.line.source == kept.line.source):
        return replace(kept, severity=Severity.ERROR)
    return kept


def _shortened(line: LogLine) -> LogLine:
    # Kept events are few (KEEP_PER_RANK_AND_RULE per rank and entry), but a line can be megabytes long:
    # evidence shows its first 2000 characters, so memory stays bounded however long the lines are.
    return LogLine(number=line.number, text=line.text[:KEPT_LINE_CHARS], raw=line.raw[:KEPT_LINE_CHARS],
                   source=line.source, rank=line.rank, local_rank=line.local_rank, host=line.host, time=line.time,
                   pid=line.pid, block=line.block, quoted=line.quoted)


def _with_rank(line: LogLine, rank: int) -> LogLine:
    # Spelled out: dataclasses.replace costs several times this, once per event of a big cascade.
    return LogLine(number=line.number, text=line.text, raw=line.raw, source=line.source, rank=rank,
                   local_rank=line.local_rank, host=line.host, time=line.time, pid=line.pid, block=line.block,
                   quoted=line.quoted)


def is_error_cause(event: Event) -> bool:
    return event.role is Role.CAUSE and event.severity is Severity.ERROR
