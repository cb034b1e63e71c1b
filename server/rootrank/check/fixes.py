"""Judging fixes at their site, choosing one per finding, and applying them to source text (never two
overlapping edits, nothing outside ranges).

One fix model for every output (text, JSON, SARIF, the language server's code actions, `--fix`):
- `judge_fixes` runs once over a file's findings: a fix that keeps a behaviour (Fix.keeps, e.g. the
  reentrant mode) is withdrawn where an error finding at the same site is caused by that behaviour
  (registry Rule.caused_by): keeping today's behaviour is only safe where today's behaviour is not the
  defect.
- `preferred` is the fix every front end names first: the first SAFE fix, else the first UNSAFE one;
  DISPLAY_ONLY fixes are never preferred.
- `choose` is what a fix-all applies: the first fix whose applicability is allowed, SAFE always, UNSAFE
  only with `unsafe=True`, DISPLAY_ONLY never. Rules list the recommended fix first even when it is
  unsafe, so `--fix` falls back to the first safe alternative.
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Iterable, Mapping

from rootrank.check.source import Locator
from rootrank.model import Applicability, Edit, Finding, Fix, Severity


def preferred(finding: Finding) -> Fix | None:
    """The fix every output presents as the one to apply (Finding.fix; see the module's docstring)."""
    return finding.fix


def ordered_fixes(finding: Finding) -> tuple[Fix, ...]:
    """The finding's fixes with the preferred one first, the others in the rule's order."""
    return finding.ordered_fixes


def judge_fixes(findings: list[Finding], caused_by: Mapping[str, str],
                moots: frozenset[str] = frozenset()) -> list[Finding]:
    """Withdraw each fix that keeps the behaviour an error at its site is caused by, and every other rule's
    fix at the site of an error of a rule in `moots` (a call the installed version cannot run at all).

    `caused_by`: rule id -> the behaviour behind it. A site is the finding's start position, or any
    span that contains it (a DDP error on the call that also lacks `use_reentrant`).
    """
    errors = [(caused_by[f.rule], f) for f in findings
              if f.severity is Severity.ERROR and caused_by.get(f.rule)]
    moot = [f for f in findings if f.severity is Severity.ERROR and f.rule in moots]
    if not errors and not moot:
        return findings
    judged = []
    for finding in findings:
        if finding.fixes and any(m.rule != finding.rule and _same_site(m, finding) for m in moot):
            judged.append(dataclasses.replace(finding, fixes=()))
            continue
        kept = tuple(fix for fix in finding.fixes
                     if not fix.keeps or not any(cause == fix.keeps and _same_site(error, finding)
                                                 for cause, error in errors))
        judged.append(finding if kept == finding.fixes else dataclasses.replace(finding, fixes=kept))
    return judged


def _same_site(error: Finding, other: Finding) -> bool:
    start = (other.line, other.column)
    return start == (error.line, error.column) or (
        (error.line, error.column) <= start and (other.end_line, other.end_column) <= (error.end_line, error.end_column))


def choose(finding: Finding, unsafe: bool) -> Fix | None:
    allowed = {Applicability.SAFE, Applicability.UNSAFE} if unsafe else {Applicability.SAFE}
    return next((f for f in finding.fixes if f.applicability in allowed), None)


def apply_fixes(source: str, findings: Iterable[Finding], unsafe: bool = False) -> str:
    """Apply the chosen fix of each finding; a fix overlapping an accepted one is left for a later pass."""
    return splice(source, plan_fixes(source, findings, unsafe).spans)


@dataclasses.dataclass(frozen=True)
class FixPlan:
    """What `apply_fixes` would do: the edits as string spans (start, end, new text), sorted and never
    overlapping; the edits themselves; and the findings they fix (a finding whose fix has exactly the edits
    of one already taken is fixed by those, and counted)."""

    spans: list[tuple[int, int, str]]
    edits: list[Edit]
    fixed: list[Finding]


def plan_fixes(source: str, findings: Iterable[Finding], unsafe: bool = False) -> FixPlan:
    locator = Locator(source)
    accepted: list[tuple[int, int, str]] = []  # kept sorted by start; never overlapping
    edits: list[Edit] = []
    fixed: list[Finding] = []
    seen: set[tuple[Edit, ...]] = set()
    ordered = sorted(findings, key=lambda f: (f.line, f.column, f.rule))
    for finding in ordered:
        fix = choose(finding, unsafe)
        if fix is None:
            continue
        if fix.edits in seen:
            fixed.append(finding)
            continue
        spans = [(locator.offset(e.line, e.column), locator.offset(e.end_line, e.end_column), e.text)
                 for e in fix.edits]
        if any(start > end for start, end, _ in spans) or any(_collides(s, accepted) for s in spans) \
                or any(_overlaps(a, b) for i, a in enumerate(spans) for b in spans[i + 1:]):
            continue
        seen.add(fix.edits)
        fixed.append(finding)
        edits.extend(fix.edits)
        for span in spans:
            bisect.insort(accepted, span, key=lambda s: (s[0], s[1]))
    return FixPlan(accepted, edits, fixed)


def splice(source: str, spans: list[tuple[int, int, str]]) -> str:
    """`source` with the sorted, non-overlapping `spans` replaced, in one pass (slicing the source once per
    edit would be quadratic)."""
    pieces: list[str] = []
    position = 0
    for start, end, text in spans:
        pieces.append(source[position:start])
        pieces.append(text)
        position = end
    pieces.append(source[position:])
    return "".join(pieces)


def still_found(source: str, plan: FixPlan, fixed_text: str, after: Iterable[Finding]) -> list[Finding]:
    """The findings of `plan` that the check of `fixed_text` (its findings: `after`) still reports: the same
    rule at the same start with the same message, carried through the edits (a start inside an edited span moves to the span's
    start). A fix that holds alone can fail beside another one (two fixes that each add a keyword the other
    conflicts with, one that re-creates what the other removes); this is how a fix-all sees it."""
    old, new = Locator(source), Locator(fixed_text)
    starts = [span[0] for span in plan.spans]
    shifts = list(itertools.accumulate(len(text) - (end - start) for start, end, text in plan.spans))

    def moved(offset: int) -> int:
        index = bisect.bisect_right(starts, offset) - 1  # the last span starting at or before the offset
        if index < 0:
            return offset
        start, end, _ = plan.spans[index]
        before = shifts[index - 1] if index else 0
        if offset < end:  # inside an edited span
            return start + before
        return offset + shifts[index]

    # The message too: a rule may report two things at one call, and fixing one leaves the other.
    present = {(f.rule, new.offset(f.line, f.column), f.message) for f in after}
    return [f for f in plan.fixed if (f.rule, moved(old.offset(f.line, f.column)), f.message) in present]


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
