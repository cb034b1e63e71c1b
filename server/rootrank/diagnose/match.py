"""Matching normalised lines against the library's log patterns.

Every pattern carries a literal that any match must contain; a line is only handed to the regex
engine when one of its literals is present, so the per-line cost is a handful of substring tests.
The lines of a failure cascade repeat one message shape with other numbers (a thousand ranks' watchdog
timeouts): which patterns match, and where their captures are, is remembered per shape (digits
blanked), so the next rank's line only slices its fields out, never running the literal gate, the
patterns that failed or those that matched. That is exact: a pattern whose regex holds no digit
(quantifier bounds aside) nor backreference treats every digit alike, so it matches every text of a
shape at the same places (shapes.py); the others are run again on each text. Patterns are never joined into one alternation (that is slower in Python's engine and hides which
pattern matched).
"""

from __future__ import annotations

import re
from collections import defaultdict

from rootrank.diagnose.memo import TextMemo
from rootrank.diagnose.shapes import ALIKE, digit_classes
from rootrank.library import Library, LogPattern

_BLANK_DIGITS = str.maketrans("123456789", "000000000")
_BLANK_BYTES = ALIKE
# Regex text that may tell one digit from another: a digit (outside {m,n}), a character escape, a
# backreference by name. Numbered backreferences hold a digit.
_TELLS_DIGITS = re.compile(r"[0-9]|\\[xuUN0]|\(\?P=")
_BOUNDS = re.compile(r"\{\d*,?\d*\}")
Spans = tuple[tuple[str, int, int], ...]
SHAPES = 1 << 12  # shapes remembered (cleared when full), of texts up to MAX_SHAPE_CHARS long
MAX_SHAPE_CHARS = 1024


def digit_blind(pattern: LogPattern) -> bool:
    """Whether the pattern matches a text exactly where it matches the text with other ASCII digits
    (its literal and its regex name no digit)."""
    return (not any(c.isdigit() for c in pattern.literal)
            and not _TELLS_DIGITS.search(_BOUNDS.sub("", pattern.pattern)))


class Matcher:
    """Which patterns to run on a line: found through the prefilter's anchors (rare first characters,
    so the regex engine's skip loop is fast), then confirmed by the literal itself."""

    def __init__(self, library: Library, anchors: tuple[bytes, ...] | None = None) -> None:
        # Patterns are tried in (entry, name) order; each literal maps to its patterns' places in it.
        # Completion markers (`after:`) are matched by the pipeline only while a line has armed them.
        self._patterns = sorted((p for p in library.patterns if not p.after), key=lambda p: (p.entry_id, p.name))
        self._exact: dict[str, list[int]] = defaultdict(list)
        self._folded: dict[str, list[int]] = defaultdict(list)
        for index, pattern in enumerate(self._patterns):
            if pattern.ignore_case:
                self._folded[pattern.literal.lower()].append(index)
            else:
                self._exact[pattern.literal].append(index)
        self._blind = [digit_blind(p) for p in self._patterns]
        # Patterns that tell digits apart, by their literal with digits blanked (as a shape has them): a
        # text of a remembered shape may hold such a literal with other digits than the first one did.
        self._telling = [(i, p.literal.translate(_BLANK_DIGITS).lower() if p.ignore_case
                          else p.literal.translate(_BLANK_DIGITS), p.ignore_case)
                         for i, p in enumerate(self._patterns) if not self._blind[i]]
        self._shapes: dict[bytes, list[tuple[int, Spans | None]]] = {}
        # Each telling pattern's own digit classes (worked out when first needed: a parse of its regex),
        # and what it found per shape under them.
        self._tables: dict[int, bytes | None] = {}
        self._told_spans: dict[tuple[int, bytes], Spans | None] = {}
        self._anchor_regex: re.Pattern[str] | None = None
        self._literals_at: dict[str, frozenset[str]] = {}
        self._unanchored_folded: tuple[str, ...] = ()
        self._indexed = False
        self._memo = TextMemo(self._match)
        if anchors is not None:
            self.use_anchors(anchors)

    def use_anchors(self, anchors: tuple[bytes, ...]) -> None:
        """Index the literals by the anchors the prefilter chose for this log."""
        texts = sorted({a.decode("utf-8", "replace") for a in anchors}, key=len, reverse=True)
        index: dict[str, set[str]] = {}
        for anchor in texts:
            literals = {lit for lit in self._exact if anchor in lit}
            literals |= {lit for lit in self._folded if anchor.lower() in lit}
            index[anchor] = literals
        # The prefilter anchors only what it selects lines by: a continuation line's literal (`follows`,
        # looked for only after the line it continues) has no anchor of its own, so it is its own.
        covered = set().union(*index.values()) if index else set()
        for literal in sorted(set(self._exact) - covered, key=len, reverse=True):
            texts.append(literal)
            index[literal] = {literal}
        self._unanchored_folded = tuple(lit for lit in self._folded if lit not in covered)
        texts.sort(key=len, reverse=True)
        # The engine reports the longest anchor at a position; anchors starting there are its prefixes.
        # (Each anchor's own prefixes are looked up: comparing every pair of anchors cost a tenth of a
        # second on hundreds of anchors, at every start.)
        self._literals_at = {
            anchor: frozenset(lit for n in range(1, len(anchor) + 1) for lit in index.get(anchor[:n], ()))
            for anchor in texts}
        self._anchor_regex = _literal_gate(texts, 0)
        self._indexed = True
        self._memo.clear()
        self._shapes.clear()
        self._told_spans.clear()

    def match(self, text: str) -> list[tuple[LogPattern, dict[str, str]]]:
        """The first matching pattern of each entry, for one line, with the fields it captured (shared
        between the lines of the same text: never to be changed in place)."""
        return self._memo(text)

    def _match(self, text: str) -> list[tuple[LogPattern, dict[str, str]]]:
        if len(text) > MAX_SHAPE_CHARS:
            return self._run(text, self._candidates(text))
        encoded = text.encode("utf-8", "surrogatepass")
        return self.match_shaped(text, encoded, encoded.translate(_BLANK_BYTES))

    def match_shaped(self, text: str, encoded: bytes, shape: bytes) -> list[tuple[LogPattern, dict[str, str]]]:
        """`match(text)` for a text of at most MAX_SHAPE_CHARS characters whose UTF-8 bytes are `encoded`
        and whose shape (every digit alike, shapes.ALIKE) is `shape`: a caller that knows them already."""
        plan = self._plan_of(text, shape)
        if not plan:
            return []
        found: list[tuple[LogPattern, dict[str, str]]] = []
        seen_entries: set[str] = set()
        patterns = self._patterns
        for place, spans in plan:
            pattern = patterns[place]
            if pattern.entry_id in seen_entries:
                continue
            if spans is None:
                spans = self._told(place, text, encoded)
                if spans is None:
                    continue
            found.append((pattern, {name: text[start:end] for name, start, end in spans}))
            seen_entries.add(pattern.entry_id)
        return found

    def matches_nothing(self, text: str, shape: bytes) -> bool:
        """Whether no text of `text`'s shape (as for match_shaped) can match any pattern: its plan is empty,
        so match_shaped returns nothing for every one of them."""
        return not self._plan_of(text, shape)

    def _plan_of(self, text: str, shape: bytes) -> list[tuple[int, Spans | None]]:
        plan = self._shapes.get(shape)
        if plan is None:
            plan = self._plan(text)
            if len(self._shapes) >= SHAPES:
                self._shapes.clear()
            self._shapes[shape] = plan
        return plan

    def _told(self, place: int, text: str, encoded: bytes) -> Spans | None:
        """Where a pattern that tells some digits apart captures in `text` (None: no match), remembered
        per shape under the pattern's own digit classes (`PG 0` apart from `PG 7`, `-6` from `-9`)."""
        if place in self._tables:
            table = self._tables[place]
        else:
            pattern = self._patterns[place]
            table = self._tables[place] = digit_classes([pattern.pattern, re.escape(pattern.literal)])
        if table is None:  # a backreference: run every time
            m = self._patterns[place].regex.search(text)
            return None if m is None else _spans(m)
        key = (place, encoded.translate(table))
        if key in self._told_spans:
            return self._told_spans[key]
        m = self._patterns[place].regex.search(text)
        if len(self._told_spans) >= 4 * SHAPES:
            self._told_spans.clear()
        spans = self._told_spans[key] = None if m is None else _spans(m)
        return spans

    def _plan(self, text: str) -> list[tuple[int, Spans | None]]:
        """What to do for every text of this text's shape, in pattern order: for each digit-blind pattern
        that matches, where its captures are (the same places in every text of the shape); for each
        pattern that tells digits apart and whose literal the shape may hold, None: run it each time.
        Every candidate is tried here, so that the plan is right whichever of an entry's patterns
        matches the next text of this shape."""
        plan: dict[int, tuple[tuple[str, int, int], ...] | None] = {}
        for place in self._candidates(text):
            if not self._blind[place]:
                continue
            m = self._patterns[place].regex.search(text)
            if m:
                plan[place] = _spans(m)
        shape = text.translate(_BLANK_DIGITS)
        folded = shape.lower()
        for place, literal, fold in self._telling:
            if literal in (folded if fold else shape):
                plan[place] = None
        return sorted(plan.items())

    def _candidates(self, text: str) -> list[int]:
        """Places (ascending) of the patterns whose literal the text holds."""
        if not self._indexed:
            # Normally the prefilter hands over its anchors first; without one, the literals themselves.
            self.use_anchors(tuple(a.encode() for a in list(self._exact) + list(self._folded)))
        regex = self._anchor_regex
        if regex is None:
            return []
        literals: set[str] = set()
        pos = 0
        while True:
            m = regex.search(text, pos)
            if m is None:
                break
            literals |= self._literals_at[m.group()]
            pos = m.start() + 1
        if self._unanchored_folded:  # none in today's library: no lowering for the common line
            lowered = text.lower()
            literals.update(lit for lit in self._unanchored_folded if lit in lowered)
        if not literals:
            return []
        folded_text = text.lower() if self._folded else ""
        places: list[int] = []
        for literal in literals:
            if literal in self._exact and literal in text:
                places.extend(self._exact[literal])
            if literal in self._folded and literal in folded_text:
                places.extend(self._folded[literal])
        return sorted(places)

    def _run(self, text: str, places: list[int]) -> list[tuple[LogPattern, dict[str, str]]]:
        found: list[tuple[LogPattern, dict[str, str]]] = []
        seen_entries: set[str] = set()
        for place in places:
            pattern = self._patterns[place]
            if pattern.entry_id in seen_entries:
                continue
            m = pattern.regex.search(text)
            if m:
                found.append((pattern, {k: v for k, v in m.groupdict().items() if v is not None}))
                seen_entries.add(pattern.entry_id)
        return found


def _spans(m: re.Match[str]) -> Spans:
    """The named captures of a match that took part in it, as (name, start, end)."""
    return tuple((name, *m.span(name)) for name in m.re.groupindex if m.start(name) >= 0)


def _literal_gate(literals: list[str], flags: int) -> re.Pattern[str] | None:
    if not literals:
        return None
    groups: dict[str, list[str]] = defaultdict(list)
    for literal in literals:
        groups[literal[0].lower() if flags else literal[0]].append(re.escape(literal[1:]))
    parts = [re.escape(first) + "(?:" + "|".join(sorted(set(rests), key=len, reverse=True)) + ")"
             for first, rests in sorted(groups.items())]
    return re.compile("|".join(parts), flags)
