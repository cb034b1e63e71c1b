"""Message shapes: what a set of regexes finds in a text, worked out once per shape of the text.

A failure cascade prints one message per rank: the same words with other numbers (a thousand ranks'
watchdog timeouts, SIGTERMs, launcher table rows). A regex without backreferences sees a character
only through the atoms that accept or reject it (literals, classes, categories, `.`); digits that every
atom of every regex in a set accepts or rejects alike are interchangeable for that set. Two texts that
differ only by interchangeable digits therefore give every regex of the set its matches at the same
places, with the same group spans. `digit_classes` computes those classes from the regexes' parse
trees; a shape is the text with each digit replaced by its class's representative; `ShapeMemo` keeps
what the regexes found per shape as spans, and each text of a known shape only slices them.

That is exact by construction, not a heuristic: a regex set that could compare two places of a text
(a backreference, a conditional on a group) gets no shapes at all (None), and digits a regex names
(`PG 0`, `[0-5]`) stay apart from the others.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterable
from typing import Any, Generic, TypeVar

T = TypeVar("T")

_NEW_RE = sys.version_info >= (3, 11)
_sre: Any = importlib.import_module("re._constants" if _NEW_RE else "sre_constants")
_sre_parse: Any = importlib.import_module("re._parser" if _NEW_RE else "sre_parse")

DIGITS = frozenset("0123456789")
_ALL = frozenset(ord(d) for d in DIGITS)
ALIKE = bytes.maketrans(b"123456789", b"000000000")  # the table of regexes that tell no digits apart
# Categories accept every ASCII digit (\d, \w, \S) or none (\D, \W, \s).
_ALL_DIGITS_CATEGORIES = {"CATEGORY_DIGIT", "CATEGORY_WORD", "CATEGORY_NOT_SPACE",
                          "CATEGORY_UNI_DIGIT", "CATEGORY_UNI_WORD", "CATEGORY_UNI_NOT_SPACE",
                          "CATEGORY_LOC_WORD"}
_NO_DIGITS_CATEGORIES = {"CATEGORY_NOT_DIGIT", "CATEGORY_NOT_WORD", "CATEGORY_SPACE",
                         "CATEGORY_UNI_NOT_DIGIT", "CATEGORY_UNI_NOT_WORD", "CATEGORY_UNI_SPACE",
                         "CATEGORY_LOC_NOT_WORD", "CATEGORY_UNI_LINEBREAK", "CATEGORY_UNI_NOT_LINEBREAK"}


class _ComparesError(Exception):
    """The regex compares parts of a text with each other (or uses what this module does not know)."""


def _category(name: str) -> frozenset[int]:
    if name in _ALL_DIGITS_CATEGORIES:
        return _ALL
    if name in _NO_DIGITS_CATEGORIES:
        # CATEGORY_UNI_NOT_LINEBREAK accepts digits, CATEGORY_UNI_LINEBREAK does not.
        return _ALL if name == "CATEGORY_UNI_NOT_LINEBREAK" else frozenset()
    raise _ComparesError(name)


def _class_digits(items: Any) -> frozenset[int]:
    """The ASCII digits a character class accepts."""
    accepted: set[int] = set()
    negate = False
    for op, av in items:
        name = str(op)
        if name == "NEGATE":
            negate = True
        elif name == "LITERAL":
            if av in _ALL:
                accepted.add(av)
        elif name == "RANGE":
            accepted.update(c for c in range(av[0], av[1] + 1) if c in _ALL)
        elif name == "CATEGORY":
            accepted.update(_category(str(av)))
        else:
            raise _ComparesError(name)
    result = frozenset(accepted)
    return _ALL - result if negate else result


def _splits(items: Any, out: list[frozenset[int]]) -> None:
    """Collect the digit sets the atoms of a parsed regex accept (each may split a class of digits)."""
    for op, av in items:
        name = str(op)
        if name in ("LITERAL", "NOT_LITERAL"):
            if av in _ALL:
                out.append(frozenset((av,)))
        elif name == "IN":
            out.append(_class_digits(av))
        elif name in ("ANY", "AT"):
            continue  # `.` accepts every digit; anchors and \b treat digits alike (all are word characters)
        elif name == "CATEGORY":
            _category(str(av))
        elif name == "SUBPATTERN":
            _splits(av[-1], out)
        elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
            _splits(av[2], out)
        elif name == "BRANCH":
            for branch in av[1]:
                _splits(branch, out)
        elif name in ("ASSERT", "ASSERT_NOT"):
            _splits(av[1], out)
        elif name == "ATOMIC_GROUP":
            _splits(av, out)
        else:  # GROUPREF, GROUPREF_EXISTS, or anything unknown: no shape is exact
            raise _ComparesError(name)


def digit_classes(patterns: Iterable[str | re.Pattern[str]]) -> bytes | None:
    """A translation table (for bytes.translate) taking each ASCII digit to the smallest digit of its
    class: digits no regex of `patterns` tells apart. None when some regex compares parts of a text.
    Plain substrings tested with `in` are given as `re.escape(substring)`."""
    accepted: list[frozenset[int]] = []
    for pattern in patterns:
        source = pattern.pattern if isinstance(pattern, re.Pattern) else pattern
        try:
            _splits(_sre_parse.parse(source), accepted)
        except _ComparesError:
            return None
    classes: list[frozenset[int]] = [_ALL]
    for digits in accepted:
        classes = [part for cls in classes for part in (cls & digits, cls - digits) if part]
    table = bytearray(range(256))
    for cls in classes:
        for digit in cls:
            table[digit] = min(cls)
    return bytes(table)


def shape_of(text: str, table: bytes) -> bytes:
    """The text's shape: its UTF-8 bytes with each ASCII digit replaced by its class's representative
    (bytes.translate is a table lookup per byte, several times cheaper than str.translate)."""
    return text.encode("utf-8", "surrogatepass").translate(table)


class ShapeMemo(Generic[T]):
    """`find(text)` remembered per shape: `find` must return what only the shape decides (spans, which
    regex matched), never text. Bounded like memo.TextMemo: at most `size` shapes of texts up to
    `max_chars` characters, cleared when full."""

    def __init__(self, table: bytes | None, find: Callable[[str], T], size: int = 1 << 12,
                 max_chars: int = 1024) -> None:
        self._table = table
        self._find = find
        self._size = size
        self._max_chars = max_chars
        self._known: dict[bytes, T] = {}

    def __call__(self, text: str) -> T:
        if self._table is None or len(text) > self._max_chars:
            return self._find(text)
        return self.shaped(text, text.encode("utf-8", "surrogatepass").translate(self._table))

    def shaped(self, text: str, shape: bytes) -> T:
        """`self(text)` for a caller that has the text's shape under this memo's table already."""
        if shape in self._known:
            return self._known[shape]
        if len(self._known) >= self._size:
            self._known.clear()
        answer = self._known[shape] = self._find(text)
        return answer

    def clear(self) -> None:
        self._known.clear()
