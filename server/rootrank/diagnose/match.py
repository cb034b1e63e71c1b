"""Matching normalised lines against the library's log patterns.

Every pattern carries a literal that any match must contain; a line is only handed to the regex
engine when one of its literals is present, so the per-line cost is a handful of substring tests.
Patterns are never joined into one alternation (that is slower in Python's engine and hides which
pattern matched).
"""

from __future__ import annotations

import re
from collections import defaultdict

from rootrank.library import Library, LogPattern


class Matcher:
    def __init__(self, library: Library) -> None:
        by_literal: dict[str, list[LogPattern]] = defaultdict(list)
        by_folded: dict[str, list[LogPattern]] = defaultdict(list)
        for pattern in library.patterns:
            if pattern.ignore_case:
                by_folded[pattern.literal.lower()].append(pattern)
            else:
                by_literal[pattern.literal].append(pattern)
        self._by_literal = tuple((lit, tuple(ps)) for lit, ps in by_literal.items())
        self._by_folded = tuple((lit, tuple(ps)) for lit, ps in by_folded.items())
        # One C-level search decides whether a line holds any literal at all; most lines hold none.
        self._gate = _literal_gate(list(by_literal), 0)
        self._folded_gate = _literal_gate(list(by_folded), re.IGNORECASE)

    def match(self, text: str) -> list[tuple[LogPattern, re.Match[str]]]:
        """The first matching pattern of each entry, for one line."""
        if not (self._gate is not None and self._gate.search(text)) and \
                not (self._folded_gate is not None and self._folded_gate.search(text)):
            return []
        found: list[tuple[LogPattern, re.Match[str]]] = []
        seen_entries: set[str] = set()
        for literal, patterns in self._by_literal:
            if literal in text:
                self._run(patterns, text, found, seen_entries)
        if self._by_folded:
            folded = text.lower()
            for literal, patterns in self._by_folded:
                if literal in folded:
                    self._run(patterns, text, found, seen_entries)
        return found

    @staticmethod
    def _run(patterns: tuple[LogPattern, ...], text: str, found: list[tuple[LogPattern, re.Match[str]]],
             seen_entries: set[str]) -> None:
        for pattern in patterns:
            if pattern.entry_id in seen_entries:
                continue
            m = pattern.regex.search(text)
            if m:
                found.append((pattern, m))
                seen_entries.add(pattern.entry_id)


def _literal_gate(literals: list[str], flags: int) -> re.Pattern[str] | None:
    if not literals:
        return None
    groups: dict[str, list[str]] = defaultdict(list)
    for literal in literals:
        groups[literal[0].lower() if flags else literal[0]].append(re.escape(literal[1:]))
    parts = [re.escape(first) + "(?:" + "|".join(sorted(set(rests), key=len, reverse=True)) + ")"
             for first, rests in sorted(groups.items())]
    return re.compile("|".join(parts), flags)
