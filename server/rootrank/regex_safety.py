"""Static screening of log patterns for catastrophic backtracking.

Python's `re` is a backtracking engine: `(a+)+b`, `(\\w+\\s?)+$` or `(a|aa)+$` take exponential time on
a long run of the repeated characters, and nested counted repeats (`(?:a{1,100}){1,100}`) polynomial
time of a high degree. Entries are data contributed by many people, so the loader refuses such
patterns instead of trusting review. The rules, over the parsed pattern:

1. a repeat that can iterate more than once must not contain another variable-length repeat, unless
   every iteration has to consume a delimiter the inner repeat cannot match (`(?:, \\w+)*` is fine:
   each round starts with ", "; `(?:\\d{1,3}\\.){3}` too: each round ends with "."). Bounded repeats
   count: `(?:a{1,30}){1,30}` tries every way of cutting a run of a's into up to 30 pieces;
2. a repeat that can iterate many times (unbounded, or more than MANY) must not contain alternatives
   that can start with the same character, or an empty one;
3. two repeats that can both take many characters must not follow each other (with only optional
   parts between them) when their characters overlap: `\\d+\\.?\\d*`, `\\w+\\s*\\w+` and `.*.*` try
   every split point of a run, for every start.

First characters are approximated over ASCII, which is what log lines are made of.
"""

from __future__ import annotations

import string
import sys
from typing import Any

if sys.version_info >= (3, 11):
    import re._parser as sre_parse
    from re._constants import MAXREPEAT
else:  # pragma: no cover - Python 3.10
    import sre_parse
    from sre_constants import MAXREPEAT

MANY = 15  # iterations above which a repeat counts as "can iterate many times"
_ASCII = frozenset(chr(c) for c in range(32, 127)) | {"\t"}
_CATEGORIES = {
    "CATEGORY_DIGIT": frozenset(string.digits),
    "CATEGORY_NOT_DIGIT": _ASCII - frozenset(string.digits),
    "CATEGORY_SPACE": frozenset(" \t"),
    "CATEGORY_NOT_SPACE": _ASCII - frozenset(" \t"),
    "CATEGORY_WORD": frozenset(string.ascii_letters + string.digits + "_"),
    "CATEGORY_NOT_WORD": _ASCII - frozenset(string.ascii_letters + string.digits + "_"),
}
_REPEATS = {"MAX_REPEAT", "MIN_REPEAT"}
Node = tuple[Any, Any]


def backtracking_risk(pattern: str) -> str:
    """A description of the first risky construct in `pattern`, or "" when it looks linear."""
    try:
        parsed = sre_parse.parse(pattern)
    except Exception as exc:
        return f"cannot parse: {exc}"
    return _scan(list(parsed.data))


def _many(high: int) -> bool:
    return high == MAXREPEAT or high > MANY


def _scan(items: list[Node]) -> str:
    adjacent = _adjacent_overlap(items)
    if adjacent:
        return adjacent
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            _low, high, body = av
            body_items = list(body)
            if high > 1:
                inner = _variable_repeats(body_items)
                if inner and not _delimited(body_items, inner):
                    return "a repeat nested inside another repeat"
            if _many(high) and _overlapping_alternatives(body_items):
                return "alternatives that can match the same text inside a repeat"
            found = _scan(body_items)
            if found:
                return found
        elif name == "SUBPATTERN":
            found = _scan(list(av[-1]))
            if found:
                return found
        elif name == "BRANCH":
            for branch in av[1]:
                found = _scan(list(branch))
                if found:
                    return found
        elif name in ("ASSERT", "ASSERT_NOT"):
            found = _scan(list(av[1]))
            if found:
                return found
    return ""


def _variable_repeats(items: list[Node]) -> list[Node]:
    """Repeats of variable length (min < max, max > 1) anywhere inside `items`."""
    out: list[Node] = []
    for op, av in items:
        name = str(op)
        if name in _REPEATS:
            low, high, body = av
            if high != low and (high == MAXREPEAT or high > 1):
                out.append((op, av))
            out.extend(_variable_repeats(list(body)))
        elif name == "SUBPATTERN":
            out.extend(_variable_repeats(list(av[-1])))
        elif name == "BRANCH":
            for branch in av[1]:
                out.extend(_variable_repeats(list(branch)))
    return out


def _delimited(body: list[Node], inner: list[Node]) -> bool:
    """Every iteration starts (or ends) with a literal character that none of the inner repeats can match."""
    for delimiter in (_leading_literal(body), _leading_literal(list(reversed(body)))):
        if delimiter is not None and all(delimiter not in _repeat_chars(node) for node in inner):
            return True
    return False


def _adjacent_overlap(items: list[Node]) -> str:
    """Rule 3 over one sequence: a long repeat, then (past optional parts only) another over shared characters."""
    pending: frozenset[str] = frozenset()  # characters of the long repeats the next element may follow
    for op, av in items:
        name = str(op)
        if name == "AT":
            continue
        if name in _REPEATS:
            low, high, body = av
            chars = _chars(list(body))
            if _many(high) and high != low:
                # Where the one ends and the other begins is ambiguous when the second can start with
                # what the first takes (`(?:, \\d+)*` after `\\d+` cannot: each round starts with ",").
                if pending & _first_chars(list(body))[0]:
                    return "two repeats over the same characters next to each other"
                pending = (pending | chars) if low == 0 else chars
                continue
            if low == 0:
                continue  # optional: the repeats around it are still adjacent
        elif name == "SUBPATTERN" and _first_chars(list(av[-1]))[1]:
            continue  # a group that can match nothing is as optional
        pending = frozenset()
    return ""


def _leading_literal(items: list[Node]) -> str | None:
    for op, av in items:
        name = str(op)
        if name == "LITERAL":
            return chr(av)
        if name == "SUBPATTERN":
            return _leading_literal(list(av[-1]))
        if name == "AT":
            continue
        return None
    return None


def _repeat_chars(node: Node) -> frozenset[str]:
    """Characters a repeat's body can consume (approximated by the chars of every element)."""
    return _chars(list(node[1][2]))


def _chars(items: list[Node]) -> frozenset[str]:
    out: set[str] = set()
    for op, av in items:
        out |= _element_chars(op, av)
    return frozenset(out)


def _element_chars(op: Any, av: Any) -> frozenset[str]:
    name = str(op)
    if name == "LITERAL":
        return frozenset({chr(av)})
    if name == "NOT_LITERAL":
        return _ASCII - {chr(av)}
    if name == "ANY":
        return _ASCII
    if name == "IN":
        return _class_chars(av)
    if name in _REPEATS:
        return _chars(list(av[2]))
    if name == "SUBPATTERN":
        return _chars(list(av[-1]))
    if name == "BRANCH":
        return frozenset().union(*(_chars(list(b)) for b in av[1]))
    return frozenset()


def _class_chars(items: list[Node]) -> frozenset[str]:
    chars: set[str] = set()
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            chars.add(chr(av))
        elif name == "RANGE":
            chars |= {chr(c) for c in range(av[0], av[1] + 1)}
        elif name == "CATEGORY":
            chars |= _CATEGORIES.get(str(av), _ASCII)
    result = frozenset(chars) & _ASCII if not negate else _ASCII - chars
    return frozenset(result)


def _first_chars(items: list[Node]) -> tuple[frozenset[str], bool]:
    """(characters the sequence can start with, whether it can match the empty string)."""
    first: set[str] = set()
    for op, av in items:
        name = str(op)
        if name == "AT":
            continue
        if name in _REPEATS:
            low, _high, body = av
            chars, nullable = _first_chars(list(body))
            first |= chars
            if low > 0 and not nullable:
                return frozenset(first), False
            continue
        if name == "SUBPATTERN":
            chars, nullable = _first_chars(list(av[-1]))
            first |= chars
            if not nullable:
                return frozenset(first), False
            continue
        if name == "BRANCH":
            results = [_first_chars(list(b)) for b in av[1]]
            first |= frozenset().union(*(r[0] for r in results))
            if not any(r[1] for r in results):
                return frozenset(first), False
            continue
        return frozenset(first | _element_chars(op, av)), False
    return frozenset(first), True


def _overlapping_alternatives(items: list[Node]) -> bool:
    for op, av in items:
        name = str(op)
        if name == "SUBPATTERN":
            if _overlapping_alternatives(list(av[-1])):
                return True
            continue
        if name != "BRANCH":
            continue
        seen: set[str] = set()
        for branch in av[1]:
            chars, nullable = _first_chars(list(branch))
            if nullable or seen & chars:
                return True
            seen |= chars
    return False


def literal_is_required(pattern: str, literal: str, ignore_case: bool = False) -> bool:
    """Whether every match of `pattern` must contain `literal` (the prefilter's promise to the matcher).

    Follows fixed runs of characters through groups and across alternations whose branches all start
    (or end) with the same text, and alternations whose every branch contains the literal.
    """
    try:
        parsed = sre_parse.parse(pattern)
    except Exception:
        return False
    wanted = literal.lower() if ignore_case else literal
    return _sequence(list(parsed.data), wanted, ignore_case)[0]


# (guaranteed, every match starts with, every match ends with, the match is exactly that text)
_Shape = tuple[bool, str, str, bool]


def _sequence(items: list[Node], literal: str, fold: bool) -> _Shape:
    run = ""
    prefix: str | None = None
    found = False
    for op, av in items:
        guaranteed, head, tail, fixed = _element(op, av, literal, fold)
        if guaranteed:
            found = True
        run += head
        if literal in (run.lower() if fold else run):
            found = True
        if not fixed:
            if prefix is None:
                prefix = run
            run = tail
    if literal in (run.lower() if fold else run):
        found = True
    whole = prefix is None
    return found, run if whole else prefix or "", run, whole


def _element(op: Any, av: Any, literal: str, fold: bool) -> _Shape:
    name = str(op)
    if name == "LITERAL":
        char = chr(av).lower() if fold else chr(av)
        return False, char, char, True
    if name == "AT":
        return False, "", "", True
    if name == "SUBPATTERN":
        return _sequence(list(av[-1]), literal, fold)
    if name in _REPEATS:
        low, high, body = av
        if low == 0:
            return False, "", "", False
        guaranteed, head, tail, fixed = _sequence(list(body), literal, fold)
        if low == high == 1:
            return guaranteed, head, tail, fixed
        return guaranteed, head, tail, False
    if name == "BRANCH":
        shapes = [_sequence(list(branch), literal, fold) for branch in av[1]]
        heads = [shape[1] for shape in shapes]
        tails = [shape[2] for shape in shapes]
        fixed = all(shape[3] for shape in shapes) and len(set(heads)) == 1
        return all(shape[0] for shape in shapes), _common_prefix(heads), _common_suffix(tails), fixed
    return False, "", "", False


def _common_prefix(texts: list[str]) -> str:
    if not texts:
        return ""
    first, last = min(texts), max(texts)
    n = 0
    while n < len(first) and first[n] == last[n]:
        n += 1
    return first[:n]


def _common_suffix(texts: list[str]) -> str:
    return _common_prefix([t[::-1] for t in texts])[::-1]
