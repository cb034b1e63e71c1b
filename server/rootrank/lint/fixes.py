"""Applying fixes to source text: one fix per finding, never two overlapping edits, nothing outside ranges.

Which fix of a finding is applied: the first one (in the rule's order of preference) whose
applicability is allowed, SAFE always, UNSAFE only with `unsafe=True`, DISPLAY_ONLY never. Rules list
the recommended fix first even when it is unsafe, so `--fix` falls back to the first safe alternative.
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank.lint.source import Locator
from rootrank.model import Applicability, Edit, Finding, Fix


def choose(finding: Finding, unsafe: bool) -> Fix | None:
    allowed = {Applicability.SAFE, Applicability.UNSAFE} if unsafe else {Applicability.SAFE}
    return next((f for f in finding.fixes if f.applicability in allowed), None)


def apply_fixes(source: str, findings: Iterable[Finding], unsafe: bool = False) -> str:
    """Apply the chosen fix of each finding; a fix overlapping an accepted one is left for a later pass."""
    locator = Locator(source)
    accepted: list[tuple[int, int, str]] = []
    seen: set[tuple[Edit, ...]] = set()
    ordered = sorted(findings, key=lambda f: (f.line, f.column, f.rule))
    for finding in ordered:
        fix = choose(finding, unsafe)
        if fix is None or fix.edits in seen:
            continue
        spans = [(locator.offset(e.line, e.column), locator.offset(e.end_line, e.end_column), e.text)
                 for e in fix.edits]
        if any(start > end for start, end, _ in spans) or any(_overlaps(s, a) for s in spans for a in accepted):
            continue
        seen.add(fix.edits)
        accepted.extend(spans)
    result = source
    for start, end, text in sorted(accepted, key=lambda s: (s[0], s[1]), reverse=True):
        result = result[:start] + text + result[end:]
    return result


def _overlaps(a: tuple[int, int, str], b: tuple[int, int, str]) -> bool:
    # Two insertions at one point conflict too: their order would be arbitrary.
    if a[0] == a[1] == b[0] == b[1]:
        return True
    return a[0] < b[1] and b[0] < a[1]
