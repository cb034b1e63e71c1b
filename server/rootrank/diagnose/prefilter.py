"""Finding the lines worth a full look, at C speed over large byte chunks.

Every log pattern carries a literal that any match contains; so do the structural lines the pipeline
needs (traceback headers, launcher reports). A line without any of them cannot produce an event, so
only lines holding one are decoded and run through the per-line pipeline.

For each literal we pick an *anchor*: a short substring starting at a byte that is rare in this log
(byte frequencies from a sample), preferring bytes already chosen for other literals, so that the set
of first bytes stays small and rare. The anchors are compiled into one byte regex grouped by first
byte; CPython's regex engine then skips ahead with a tight charset loop and rarely stops. The optional
Hyperscan engine (`pip install rootrank[fast]`) looks for the very same anchors, so both engines select
exactly the same lines and give the same diagnosis; `ROOTRANK_ENGINE=python|hyperscan` forces one.
"""

from __future__ import annotations

import os
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from typing import Any

ANCHOR_LEN = 6
MIN_ANCHOR_LEN = 3
MAX_FOLDED_ANCHOR_LEN = 5  # a case-folded anchor becomes 2**letters case variants
# The pieces of case-folded literals are counted in 4 KiB of every 32 KiB of the sample: each count is a scan.
FOLDED_PIECE_BYTES = 4 << 10
FOLDED_PIECE_STEP = 32 << 10
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
    # torch.multiprocessing.spawn names the child whose traceback follows.
    "terminated with the following error",
)


def choose_anchors(literals: Iterable[bytes], frequency: Counter[int]) -> set[bytes]:
    """One anchor per literal; the literals with the fewest rare bytes choose first, then the others
    reuse a first byte already chosen when they can (the cost is the union of first bytes)."""
    def starts(lit: bytes) -> range:
        return range(max(1, len(lit) - MIN_ANCHOR_LEN + 1))

    chosen_bytes: set[int] = set()
    anchors: set[bytes] = set()
    unique = sorted(set(literals), key=lambda lit: (-min(frequency[lit[i]] for i in starts(lit)), lit))
    for literal in unique:
        best = min(starts(literal),
                   key=lambda i: (0 if literal[i] in chosen_bytes else frequency[literal[i]], frequency[literal[i]]))
        chosen_bytes.add(literal[best])
        anchors.add(literal[best: best + ANCHOR_LEN])
    return anchors


class Prefilter:
    """Selects lines containing any literal (case-sensitive ones as given, the others case-folded)."""

    def __init__(self, literals: Iterable[str], folded_literals: Iterable[str] = (), sample: bytes = b"",
                 engine: str | None = None) -> None:
        sample = sample[: 2 << 20]
        # Every fourth byte is as good a frequency estimate and four times cheaper to count.
        frequency: Counter[int] = Counter(sample[::4])
        exact = [lit.encode("utf-8") for lit in literals if lit]
        anchors = choose_anchors(exact, frequency)
        # A case-insensitive literal becomes every case variant of a short piece of it, so that one
        # case-sensitive scan serves both kinds (a case-insensitive regex loses the fast skip loop).
        folded_sample = b"".join(sample[i: i + FOLDED_PIECE_BYTES]
                                 for i in range(0, len(sample), FOLDED_PIECE_STEP)).lower()
        for literal in folded_literals:
            anchors.update(_case_variants(_fewest_letters(literal.lower().encode("utf-8"), frequency,
                                                          folded_sample)))
        self.anchors = tuple(sorted(anchors))
        self._regex = _grouped_regex(self.anchors, 0) if self.anchors else None
        self.engine = _pick_engine(engine)
        self._hs: Any = _hyperscan_db(self.anchors) if self.engine == "hyperscan" else None

    def candidates(self, buf: bytes | bytearray, start: int, end: int) -> list[int]:
        """Start offsets of the lines in buf[start:end] that hold an anchor, ascending."""
        if self._hs is not None:
            return self._hyperscan_candidates(buf, start, end)
        out: list[int] = []
        pos = start
        while pos < end:
            hit = self._next_hit(buf, pos, end)
            if hit < 0:
                break
            line_start = buf.rfind(b"\n", pos, hit) + 1
            out.append(max(line_start, pos))
            eol = buf.find(b"\n", hit, end)
            if eol < 0:
                break
            pos = eol + 1
        return out

    def _next_hit(self, buf: bytes | bytearray, pos: int, end: int) -> int:
        if self._regex is None:
            return -1
        m = self._regex.search(buf, pos, end)
        return m.start() if m else -1

    def _hyperscan_candidates(self, buf: bytes | bytearray, start: int, end: int) -> list[int]:
        hits: list[int] = []

        def on_match(_id: int, _from: int, to: int, _flags: int, _ctx: object) -> None:
            hits.append(to)

        if start == 0 and end == len(buf):
            self._hs.scan(buf, match_event_handler=on_match)
        else:
            with memoryview(buf) as view, view[start:end] as piece:  # no copy of a chunk-sized slice
                self._hs.scan(piece, match_event_handler=on_match)
        starts: list[int] = []
        last_line_end = -1
        for to in sorted(hits):
            absolute = start + to - 1  # offset of the anchor's last byte
            if absolute <= last_line_end:
                continue
            line_start = buf.rfind(b"\n", start, absolute) + 1
            line_end = buf.find(b"\n", absolute, end)
            starts.append(max(line_start, start))
            last_line_end = end if line_end < 0 else line_end
        return starts


def _pick_engine(engine: str | None) -> str:
    wanted = (engine or os.environ.get("ROOTRANK_ENGINE") or "auto").lower()
    if wanted == "python":
        return "python"
    try:
        import hyperscan  # noqa: F401
    except ImportError:
        if wanted == "hyperscan":
            raise RuntimeError("ROOTRANK_ENGINE=hyperscan, but hyperscan is not installed "
                               "(pip install 'rootrank[fast]')") from None
        return "python"
    return "hyperscan"


def _fewest_letters(literal: bytes, frequency: Counter[int], folded_sample: bytes) -> bytes:
    """The MIN_ANCHOR_LEN piece of a case-folded literal that is rarest in the sample."""
    if len(literal) <= MIN_ANCHOR_LEN:
        return literal
    pieces = [literal[i: i + n] for n in range(MIN_ANCHOR_LEN, MAX_FOLDED_ANCHOR_LEN + 1)
              for i in range(len(literal) - n + 1)]

    def first_byte_cost(piece: bytes) -> int:
        first = piece[:1]
        return frequency[first.lower()[0]] + (frequency[first.upper()[0]] if first.isalpha() else 0)

    # Pieces absent from the sample first (each occurrence is a line to look at); among those, the
    # rarest first byte (the scan's skip speed), then the fewest occurrences. Each piece is counted once:
    # a few hundred scans of the sample would cost more than the rest of a small diagnosis.
    counts = {p: folded_sample.count(p) for p in set(pieces)}
    return min(pieces, key=lambda p: (counts[p] > 0, first_byte_cost(p), counts[p], len(p), p))


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
