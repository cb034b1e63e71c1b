"""Finding the lines worth a full look, at C speed over large byte chunks.

Every log pattern carries a literal that any match contains; so do the structural lines the pipeline
needs (traceback headers, launcher reports). A line without any of them cannot produce an event, so
only lines holding one are decoded and run through the per-line pipeline.

For each literal we pick an *anchor*: a window of it (up to ANCHOR_LEN bytes) that is rare in this
log, counted in a sample of its start, middle and end, since every occurrence is a line for the
per-line pipeline. The pure-Python scan runs one pass per anchor first byte: a regex that starts with
one literal byte skips ahead in a tight loop (about 0.3 ns a byte), and where that byte is rare in a
chunk memchr jumps between its occurrences instead (FirstBytePass, ten times faster again), while an
alternation of several first bytes tests every byte (ten times slower; it is used when so many first
bytes are needed that it costs less). So the anchors share a few first bytes, chosen as a weighted set
cover (each first byte costs a pass and a stop at each of its occurrences, a rare one's pass far less),
and a window too common to be worth its lines is given up for another. The optional Hyperscan engine
(`pip install rootrank[fast]`) looks for the very same anchors, so both engines select exactly the same lines and give the same
diagnosis; `ROOTRANK_ENGINE=python|hyperscan` forces one, and `ROOTRANK_ENGINE=off` selects every line
(the reference the prefilter is tested against).
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

ANCHOR_LEN = 12  # a literal's windows are this long (shorter at its tail, never under MIN_ANCHOR_LEN)
MIN_ANCHOR_LEN = 4
MAX_FOLDED_ANCHOR_LEN = 5  # a case-folded anchor becomes 2**letters case variants
# The pieces of case-folded literals are counted in 4 KiB of every 32 KiB of the sample: each count is a scan.
FOLDED_PIECE_BYTES = 4 << 10
FOLDED_PIECE_STEP = 32 << 10
# Costs of the pure-Python scan, in bytes skipped by one pass: a stop at a first byte's occurrence, and a
# line handed to the per-line pipeline (measured on 8 MiB chunks of both generators' logs, idle machine:
# about 0.25 ns a byte for a pass that stops nowhere, 10 ns a stop, 10-30 us a line; a line is weighed
# more, for Hyperscan, which pays only for lines). A stop was once put at 250 bytes: the cover then
# wanted 20-21 first bytes, past ONE_REGEX_COST, and the single alternation scanned 1.5x slower.
STOP_COST = 40
LINE_COST = 100_000
# One regex with several first bytes tests every byte: it costs about this many passes of one-byte regexes
# (the 20-byte alternation: 74 ms per 8 MiB against 2.1-4.6 ms a one-byte pass).
ONE_REGEX_COST = 30
# A first byte seen less than once per this many bytes is looked for with memchr (FirstBytePass): a stop
# there costs a Python call (0.3-0.4 us), which the regex engine's skip loop (about 0.3 ns a byte) spends
# on some 1,250 bytes (measured on 8 MiB chunks of both generators' logs); rounded up, for a margin.
SPARSE_STOP_BYTES = 2048
SPARSE_PASS_COST = 0.12  # memchr over bytes that hold none of it, against the regex's skip loop
PROBE_BYTES = 64 << 10  # how much of a chunk's head is counted to tell (bytes.count has no memchr)
# A window seen more often than once per this many sample bytes is common: its literal is reported.
COMMON_EVERY = 64 << 10
# A literal's other windows are counted (one bytes.count each, in at most COUNT_SAMPLE bytes of the
# sample) when its first anchor is seen more often than once per COUNT_EVERY sample bytes.
COUNT_EVERY = 256 << 10
COUNT_SAMPLE = 256 << 10
# Lines the pipeline needs even though no entry matches them (traceback structure, launcher reports).
STRUCTURAL_LITERALS = (
    "Traceback (most recent call last)",
    "Exception ignored in",
    "During handling of the above exception",
    "The above exception was the direct cause",
    "closing signal",
    "failed (exitcode",
    "ChildFailedError",
    "Root Cause (first observed failure)",
    "Root Cause:",  # torch 1.9-1.10's heading of the same table
    "srun: error:",
    "Process name: [[",
    "Exit code:",
    "world size",
    "world_size",
    "WORLD_SIZE",
    "MEMBER: ",
    # torchrun's rendezvous result and pasted command lines: which global ranks a node's agent ran.
    "global_ranks=[",
    "local_ranks=[",
    "group_rank=",
    "--node-rank",
    "--node_rank",
    # torch.multiprocessing.spawn names the child whose traceback follows; so does Composer's launcher.
    "terminated with the following error",
    "----------Begin global rank ",
)


def windows_of(literal: bytes) -> list[bytes]:
    """The anchors a literal may get: a window at each start, ANCHOR_LEN long or up to its end."""
    if len(literal) <= MIN_ANCHOR_LEN:
        return [literal]
    return [literal[i: i + ANCHOR_LEN] for i in range(len(literal) - MIN_ANCHOR_LEN + 1)]


class AnchorChoice:
    """One anchor per literal, and what the sample said about it.

    First bytes are chosen as a greedy weighted set cover: a byte costs a pass over the data plus a
    stop at each of its occurrences. Each literal first takes its longest window starting with the
    cheapest chosen byte; the scans for those anchors are run over the sample, and a literal whose
    anchor occurs there gets the window of least cost among all of its windows: lines it selects,
    plus a new pass when its first byte is not yet scanned for. (An anchor seen once or twice
    costs less than the counting would.)
    """

    def __init__(self, literals: Iterable[bytes], frequency: Counter[int], sample: bytes = b"") -> None:
        self._frequency = frequency
        self._sampled = max(1, sum(frequency.values()))
        unique = sorted(set(literals))
        chosen = self._cover(unique)
        pick = {lit: min((w for w in windows_of(lit) if w[0] in chosen),
                         key=lambda w: (self.byte_cost(w[0]), -len(w), w)) for lit in unique}
        seen = _occurrences(set(pick.values()), sample)
        counted = _spread(sample, COUNT_SAMPLE)
        scale = len(sample) / max(1, len(counted))
        line_cost = LINE_COST / max(1, len(sample))
        self.counts: dict[bytes, int] = {w: seen[w] for w in pick.values()}
        worth_counting = len(sample) // COUNT_EVERY
        for lit in unique:
            # Every window occurs at least as often as the literal: when that is common too (the lines
            # it is there for, a failure cascade in the end sample), no window is worth counting.
            if seen[pick[lit]] <= worth_counting or counted.count(lit) * scale > worth_counting:
                continue
            counts = {pick[lit]: seen[pick[lit]]}
            # Cheapest first: a window absent from the sample that starts with a byte already scanned
            # for cannot be beaten.
            for w in sorted(windows_of(lit), key=lambda w: (w[0] not in chosen, self.byte_cost(w[0]), -len(w), w)):
                if w not in counts:
                    counts[w] = round(counted.count(w) * scale)
                    if counts[w] == 0 and w[0] in chosen:
                        break
            pick[lit] = min(counts, key=lambda w: (
                counts[w] * line_cost + (0 if w[0] in chosen else self.byte_cost(w[0])), -len(w), w))
            chosen.add(pick[lit][0])
            self.counts.update(counts)
        self.first_bytes = chosen
        self.anchor_of = pick
        # Literals every window of which is common in this log: the lines they select are many.
        limit = len(sample) // COMMON_EVERY
        self.common = sorted(lit for lit, a in pick.items() if self.counts.get(a, 0) > limit)

    def byte_cost(self, byte: int) -> float:
        """What a pass for this first byte costs, in passes that stop nowhere (FirstBytePass)."""
        frequency = self._frequency[byte] / self._sampled
        return min(1 + STOP_COST * frequency, SPARSE_PASS_COST + SPARSE_STOP_BYTES * frequency)

    def _cover(self, literals: list[bytes]) -> set[int]:
        """A greedy weighted cover, then improved: each chosen byte, costliest first, is dropped when the
        literals it alone covered can be covered again for less (a greedy pick of a dense byte early on,
        for the many literals it covers, can leave a few cheap bytes doing the same job for less)."""
        starts = {lit: frozenset(w[0] for w in windows_of(lit)) for lit in literals}
        chosen = self._greedy(set(literals), starts, set())
        improved = True
        while improved:
            improved = False
            for byte in sorted(chosen, key=lambda b: (-self.byte_cost(b), b)):
                rest = chosen - {byte}
                alone = {lit for lit in literals if not starts[lit] & rest}
                again = self._greedy(alone, starts, {byte})
                if sum(map(self.byte_cost, again)) < self.byte_cost(byte) - 1e-9:
                    chosen = rest | again
                    improved = True
                    break
        return chosen

    def _greedy(self, literals: set[bytes], starts: dict[bytes, frozenset[int]], banned: set[int]) -> set[int]:
        """Bytes covering `literals`, none of `banned` (a literal only `banned` bytes start can be covered
        only by them: then every byte it needs is allowed)."""
        chosen: set[int] = set()
        uncovered = set(literals)
        while uncovered:
            gain: Counter[int] = Counter(b for lit in uncovered for b in starts[lit] - banned)
            if not gain:
                gain = Counter(b for lit in uncovered for b in starts[lit])
            best = max(gain, key=lambda b: (gain[b] / self.byte_cost(b), -b))
            chosen.add(best)
            uncovered = {lit for lit in uncovered if best not in starts[lit]}
        return chosen


def _spread(sample: bytes, size: int, piece: int = 16 << 10) -> bytes:
    """At most `size` bytes of the sample, in pieces spread over all of it."""
    if len(sample) <= size:
        return sample
    step = len(sample) * piece // size
    return b"".join(sample[i: i + piece] for i in range(0, len(sample), step))


def _occurrences(anchors: set[bytes], sample: bytes) -> Counter[bytes]:
    """How often each anchor is hit by its scan over the sample (one scan per first byte)."""
    seen: Counter[bytes] = Counter()
    for group in _by_first_byte(tuple(sorted(anchors))):
        seen.update(_grouped_regex(group, 0).findall(sample))  # the regex has no groups: whole matches
    # A hit names the longest anchor at its place: the shorter ones it starts with occurred too.
    starting: Counter[bytes] = Counter()  # hits per prefix of the anchors hit
    for hit, n in seen.items():
        for end in range(1, len(hit) + 1):
            starting[hit[:end]] += n
    for anchor in anchors:
        if not seen[anchor]:
            seen[anchor] = starting[anchor]
    return seen


class Prefilter:
    """Selects lines containing any literal (case-sensitive ones as given, the others case-folded)."""

    def __init__(self, literals: Iterable[str], folded_literals: Iterable[str] = (), sample: bytes = b"",
                 engine: str | None = None) -> None:
        sample = sample[: 2 << 20]
        # Every sixteenth byte (a hundred thousand of them) is as good a frequency estimate of the bytes
        # that matter (those of a literal's windows) and sixteen times cheaper to count. The estimate only
        # steers which anchor a literal gets: the lines selected are those holding a literal, whatever it is.
        frequency: Counter[int] = Counter(sample[::16])
        exact = [lit.encode("utf-8") for lit in literals if lit]
        choice = AnchorChoice(exact, frequency, sample)
        self.common_literals = tuple(lit.decode("utf-8", "replace") for lit in choice.common)
        anchors = set(choice.anchor_of.values())
        first_bytes = {a[0] for a in anchors}
        # A case-insensitive literal becomes every case variant of a short piece of it, so that one
        # case-sensitive scan serves both kinds (a case-insensitive regex loses the fast skip loop).
        folded_sample = b"".join(sample[i: i + FOLDED_PIECE_BYTES]
                                 for i in range(0, len(sample), FOLDED_PIECE_STEP)).lower()
        # What a hit on an anchor must be confirmed by: the whole literal on the same line (a short
        # anchor chosen in a sample can be common elsewhere in the log; a line without the literal
        # itself matches no pattern, and costs the per-line pipeline a hundred times the check).
        wanted: dict[bytes, set[tuple[bytes, bool]]] = defaultdict(set)
        for literal_bytes, anchor in choice.anchor_of.items():
            wanted[anchor].add((literal_bytes, False))
        for literal in folded_literals:
            folded = literal.lower().encode("utf-8")
            variants = _case_variants(_fewest_letters(folded, choice, folded_sample, first_bytes))
            first_bytes.update(v[0] for v in variants)
            anchors.update(variants)
            for variant in variants:
                wanted[variant].add((folded, True))
        self.anchors = tuple(sorted(anchors))
        # The scan reports the longest anchor at a place: the anchors it starts with were hit too.
        # (Each anchor's own prefixes are looked up, not every other anchor.)
        self._confirm = {a: tuple(sorted({w for n in range(1, len(a) + 1) for w in wanted.get(a[:n], ())}))
                         for a in self.anchors}
        self.engine = _pick_engine(engine)
        self._hs: Any = _hyperscan_db(self.anchors) if self.engine == "hyperscan" else None
        # One regex per first byte (see the module docstring), unless so many first bytes are needed
        # that one regex over all of them, testing every byte, costs less. Hyperscan needs none.
        self._passes: list[FirstBytePass] = []
        if self.engine == "python":
            groups = _by_first_byte(self.anchors)
            if len(groups) <= ONE_REGEX_COST:
                self._passes = [FirstBytePass(group[0][:1], _grouped_regex(group, 0)) for group in groups]
            elif self.anchors:
                self._passes = [FirstBytePass(b"", _grouped_regex(self.anchors, 0))]

    def candidates(self, buf: bytes | bytearray, start: int, end: int) -> list[int]:
        """Start offsets of the lines in buf[start:end] that hold an anchor, ascending."""
        if self.engine == "off":
            return _every_line(buf, start, end)
        if self._hs is not None:
            return self._hyperscan_candidates(buf, start, end)
        hits: list[tuple[int, bytes]] = []
        for scan in self._passes:
            scan.hits(buf, start, end, hits)
        hits.sort()
        return self._confirmed(buf, start, end, hits)

    def _confirmed(self, buf: bytes | bytearray, start: int, end: int, hits: list[tuple[int, bytes]]) -> list[int]:
        """The starts of the lines holding the given hits (ascending) whose anchor's literal is on the line."""
        starts: list[int] = []
        confirm = self._confirm
        last_line_end = -1
        for hit, anchor in hits:
            if hit <= last_line_end:
                continue
            line_start = max(buf.rfind(b"\n", start, hit) + 1, start)
            line_end = buf.find(b"\n", hit, end)
            line_end = end if line_end < 0 else line_end
            folded_line: bytes | None = None
            for literal, folded in confirm[anchor]:
                if not folded:
                    if buf.find(literal, line_start, line_end) >= 0:
                        break
                    continue
                if folded_line is None:
                    folded_line = bytes(buf[line_start:line_end]).lower()
                if literal in folded_line:
                    break
            else:
                continue  # the literal is not on this line: a later hit on it may still confirm it
            starts.append(line_start)
            last_line_end = line_end
        return starts

    def _hyperscan_candidates(self, buf: bytes | bytearray, start: int, end: int) -> list[int]:
        hits: list[tuple[int, bytes]] = []
        anchors = self.anchors

        def on_match(anchor: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            hits.append((start + to - len(anchors[anchor]), anchors[anchor]))  # where the anchor starts

        if start == 0 and end == len(buf):
            self._hs.scan(buf, match_event_handler=on_match)
        else:
            with memoryview(buf) as view, view[start:end] as piece:  # no copy of a chunk-sized slice
                self._hs.scan(piece, match_event_handler=on_match)
        hits.sort()
        return self._confirmed(buf, start, end, hits)


class FirstBytePass:
    """One pass of the pure-Python scan: the hits of a regex whose every match starts with one byte.

    Where that byte is rare (most bytes of most chunks for the uppercase letters and punctuation the
    anchors start with), memchr (a one-byte bytes.find) jumps between its occurrences and the regex is
    tried there: the hits `finditer` gives, at a tenth of the regex engine's byte-by-byte skip loop.
    Each stop costs a Python call, what that loop spends on about SPARSE_STOP_BYTES bytes, so a chunk
    whose head holds the byte more often than that is left to `finditer`, and so is the rest of one
    where it turns out so further on."""

    __slots__ = ("first", "regex")

    def __init__(self, first: bytes, regex: re.Pattern[bytes]) -> None:
        self.first = first  # b"": the regex starts with several bytes
        self.regex = regex

    def hits(self, buf: bytes | bytearray, start: int, end: int, into: list[tuple[int, bytes]]) -> None:
        first, regex = self.first, self.regex
        head = min(end - start, PROBE_BYTES)
        if not first or buf.count(first, start, start + head) * SPARSE_STOP_BYTES > head:
            into.extend((m.start(), m.group()) for m in regex.finditer(buf, start, end))
            return
        find, match = buf.find, regex.match
        stops_left = (end - start) // SPARSE_STOP_BYTES + 1
        place = find(first, start, end)
        while place >= 0:
            stops_left -= 1
            if not stops_left:
                into.extend((m.start(), m.group()) for m in regex.finditer(buf, place, end))
                return
            found = match(buf, place, end)
            if found is None:
                place = find(first, place + 1, end)
            else:
                into.append((place, found.group()))
                place = find(first, found.end(), end)


def _every_line(buf: bytes | bytearray, start: int, end: int) -> list[int]:
    starts = [start] if start < end else []
    newline = buf.find(b"\n", start, end)
    while 0 <= newline < end - 1:
        starts.append(newline + 1)
        newline = buf.find(b"\n", newline + 1, end)
    return starts


def _by_first_byte(anchors: tuple[bytes, ...]) -> list[tuple[bytes, ...]]:
    groups: dict[int, list[bytes]] = defaultdict(list)
    for anchor in anchors:
        groups[anchor[0]].append(anchor)
    return [tuple(groups[first]) for first in sorted(groups)]


def _pick_engine(engine: str | None) -> str:
    wanted = (engine or os.environ.get("ROOTRANK_ENGINE") or "auto").lower()
    if wanted in ("python", "off"):
        return wanted
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        if wanted == "hyperscan":
            raise RuntimeError("ROOTRANK_ENGINE=hyperscan, but hyperscan is not installed "
                               "(pip install 'rootrank[fast]')") from None
        return "python"
    return "hyperscan"


def _fewest_letters(literal: bytes, choice: AnchorChoice, folded_sample: bytes, first_bytes: set[int]) -> bytes:
    """The short piece of a case-folded literal that is rarest in the sample, preferring pieces whose
    case variants start with bytes already scanned for."""
    if len(literal) <= MIN_ANCHOR_LEN:
        return literal
    pieces = [literal[i: i + n] for n in range(MIN_ANCHOR_LEN, MAX_FOLDED_ANCHOR_LEN + 1)
              for i in range(len(literal) - n + 1)]

    def first_byte_cost(piece: bytes) -> float:
        return sum(choice.byte_cost(b) for b in {piece[:1].lower()[0], piece[:1].upper()[0]} - first_bytes)

    # Pieces absent from the sample first (each occurrence is a line to look at); among those, the
    # cheapest first bytes (a pass each), then the fewest occurrences. Pieces are counted cheapest first,
    # and the first one absent from the sample ends the counting: no piece counted after it can beat it.
    counts: dict[bytes, int] = {}
    for piece in sorted(set(pieces), key=lambda p: (first_byte_cost(p), -len(p), p)):
        counts[piece] = folded_sample.count(piece)
        if counts[piece] == 0:
            return piece
    return min(counts, key=lambda p: (first_byte_cost(p), counts[p], -len(p), p))


def _case_variants(piece: bytes) -> set[bytes]:
    variants = {b""}
    for byte in piece:
        char = bytes([byte])
        options = {char.lower(), char.upper()}
        variants = {v + o for v in variants for o in options}
    return variants


def _hyperscan_db(exact: tuple[bytes, ...]) -> Any:
    import hyperscan

    expressions = [re.escape(a) for a in exact]
    flags = [0] * len(exact)
    db = hyperscan.Database(mode=hyperscan.HS_MODE_BLOCK)
    db.compile(expressions=expressions, ids=list(range(len(expressions))), elements=len(expressions),
               flags=flags)
    return db


def _grouped_regex(anchors: tuple[bytes, ...], flags: int) -> re.Pattern[bytes]:
    """One regex for the anchors, as a trie: at each stop the engine follows the bytes that can come
    next instead of trying every anchor of the first byte in turn (a fifth less time on logs of both
    generators). Children come before the end of a shorter anchor, and the children of a node start
    with different bytes, so the match at a place is the longest anchor there, as with an alternation
    sorted by length."""
    if flags & re.IGNORECASE:
        return _sorted_alternation(anchors, flags)
    trie: dict[int, Any] = {}
    for anchor in anchors:
        node = trie
        for byte in anchor:
            node = node.setdefault(byte, {})
        node[_END] = None
    return re.compile(_trie_source(trie), flags)


_END = -1  # marks a node where an anchor ends


def _trie_source(node: dict[int, Any]) -> bytes:
    parts = [re.escape(bytes([byte])) + _trie_source(child) for byte, child in sorted(node.items()) if byte != _END]
    if not parts:
        return b""
    if _END in node:
        parts.append(b"")
    return parts[0] if len(parts) == 1 else b"(?:" + b"|".join(parts) + b")"


def _sorted_alternation(anchors: tuple[bytes, ...], flags: int) -> re.Pattern[bytes]:
    # One alternative per first byte keeps the engine's branch short at every stop.
    groups: dict[bytes, list[bytes]] = defaultdict(list)
    for anchor in anchors:
        key = anchor[:1].lower() if flags & re.IGNORECASE else anchor[:1]
        groups[key].append(anchor[1:])
    parts = []
    for first, rests in sorted(groups.items()):
        alternatives = sorted({re.escape(r) for r in rests}, key=len, reverse=True)
        parts.append(re.escape(first) + b"(?:" + b"|".join(alternatives) + b")")
    return re.compile(b"|".join(parts), flags)
