"""Static screening of log patterns for catastrophic backtracking (nested or overlapping unbounded repeats).

Python's `re` is a backtracking engine, so a pattern such as `(a+)+b` or `(\\w|\\d)*x` takes exponential time
on a long run of the repeated characters. Entries are data contributed by many people, so the loader
refuses such patterns instead of trusting review.
"""

from __future__ import annotations

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import re._parser as sre_parse
    from re._constants import MAXREPEAT
else:  # pragma: no cover - Python 3.10
    import sre_parse
    from sre_constants import MAXREPEAT

_REPEATS = {"MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"}


def backtracking_risk(pattern: str) -> str:
    """Return a description of the first risky construct in `pattern`, or "" when it looks linear."""
    try:
        parsed = sre_parse.parse(pattern)
    except Exception as exc:
        return f"cannot parse: {exc}"
    return _scan(list(parsed.data), inside_unbounded=False)


def _unbounded(op: str, av: Any) -> bool:
    return op in _REPEATS and av[1] == MAXREPEAT


def _scan(items: list[tuple[Any, Any]], inside_unbounded: bool) -> str:
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            _low, high, body = av
            if name == "POSSESSIVE_REPEAT":
                continue
            unbounded = high == MAXREPEAT or (isinstance(high, int) and high > 1000)
            if unbounded and inside_unbounded and _can_repeat(list(body)):
                return "an unbounded repeat nested inside another unbounded repeat"
            if unbounded and _has_overlapping_branches(list(body)):
                return "an unbounded repeat over alternatives that can match the same text"
            found = _scan(list(body), inside_unbounded or unbounded)
            if found:
                return found
        elif name == "SUBPATTERN":
            found = _scan(list(av[-1]), inside_unbounded)
            if found:
                return found
        elif name == "BRANCH":
            for branch in av[1]:
                found = _scan(list(branch), inside_unbounded)
                if found:
                    return found
        elif name in ("ASSERT", "ASSERT_NOT"):
            found = _scan(list(av[1]), inside_unbounded)
            if found:
                return found
    return ""


def _can_repeat(items: list[tuple[Any, Any]]) -> bool:
    """True when the body itself holds an unbounded repeat (directly or in a group)."""
    for op, av in items:
        name = str(op)
        if name in _REPEATS and str(op) != "POSSESSIVE_REPEAT" and av[1] == MAXREPEAT:
            return True
        if name == "SUBPATTERN" and _can_repeat(list(av[-1])):
            return True
        if name == "BRANCH" and any(_can_repeat(list(b)) for b in av[1]):
            return True
    return False


def _first_chars(items: list[tuple[Any, Any]]) -> set[str] | None:
    """Characters a sequence can start with, or None when unknown/any."""
    if not items:
        return None
    op, av = items[0]
    name = str(op)
    if name == "LITERAL":
        return {chr(av)}
    if name == "SUBPATTERN":
        return _first_chars(list(av[-1]))
    return None


def _has_overlapping_branches(items: list[tuple[Any, Any]]) -> bool:
    """An alternation inside a repeat whose branches can start with the same character (or are opaque)."""
    for op, av in items:
        name = str(op)
        if name == "SUBPATTERN" and _has_overlapping_branches(list(av[-1])):
            return True
        if name != "BRANCH":
            continue
        seen: set[str] = set()
        for branch in av[1]:
            chars = _first_chars(list(branch))
            if chars is None:
                # Opaque branches (classes, `.`) are common and usually disjoint in practice;
                # flag only when two such branches are both unbounded themselves.
                if _can_repeat(list(branch)):
                    return True
                continue
            if seen & chars:
                return True
            seen |= chars
    return False
