"""Applying fixes to source text: one fix per finding, never two overlapping edits, nothing outside ranges.

Which fix of a finding is applied: the first one (in the rule's order of preference) whose
applicability is allowed, SAFE always, UNSAFE only with `unsafe=True`, DISPLAY_ONLY never. Rules list
the recommended fix first even when it is unsafe, so `--fix` falls back to the first safe alternative.
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable

from rootrank.check.source import Locator
from rootrank.model import Applicability, Edit, Finding, Fix


def choose(finding: Finding, unsafe: bool) -> Fix | None:
    allowed = {Applicability.SAFE, Applicability.UNSAFE} if unsafe else {Applicability.SAFE}
    return next((f for f in finding.fixes if f.applicability in allowed), None)


def apply_fixes(source: str, findings: Iterable[Finding], unsafe: bool = False) -> str:
    """Apply the chosen fix of each finding; a fix overlapping an accepted one is left for a later pass."""
    locator = Locator(source)
    accepted: list[tuple[int, int, str]] = []  # kept sorted by start; never overlapping
    seen: set[tuple[Edit, ...]] = set()
    ordered = sorted(findings, key=lambda f: (f.line, f.column, f.rule))
    for finding in ordered:
        fix = choose(finding, unsafe)
        if fix is None or fix.edits in seen:
            continue
        spans = [(locator.offset(e.line, e.column), locator.offset(e.end_line, e.end_column), e.text)
                 for e in fix.edits]
        if any(start > end for start, end, _ in spans) or any(_collides(s, accepted) for s in spans) \
                or any(_overlaps(a, b) for i, a in enumerate(spans) for b in spans[i + 1:]):
            continue
        seen.add(fix.edits)
        for span in spans:
            bisect.insort(accepted, span, key=lambda s: (s[0], s[1]))
    # Build the result in one pass (slicing the source once per edit would be quadratic).
    pieces: list[str] = []
    position = 0
    for start, end, text in accepted:
        pieces.append(source[position:start])
        pieces.append(text)
        position = end
    pieces.append(source[position:])
    return "".join(pieces)


def _collides(span: tuple[int, int, str], accepted: list[tuple[int, int, str]]) -> bool:
    """Whether `span` overlaps an accepted span; only its neighbours in start order can."""
    index = bisect.bisect_left(accepted, (span[0], span[1]), key=lambda s: (s[0], s[1]))
    if index > 0 and _overlaps(span, accepted[index - 1]):
        return True
    while index < len(accepted) and accepted[index][0] <= span[1]:
        if _overlaps(span, accepted[index]):
            return True
        index += 1
    return False


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    # Two insertions at one point conflict too: their order would be arbitrary.
    if a[0] == a[1] == b[0] == b[1]:
        return True
    return a[0] < b[1] and b[0] < a[1]
