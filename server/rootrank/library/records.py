"""The failure library's records: an entry, its log patterns, fix variants and examples, and the
library as a whole. Small frozen records; loading and validation live in load.py and validate.py."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rootrank.model import Role, Severity

_COMPILED: dict[tuple[str, bool], re.Pattern[str]] = {}


@dataclass(frozen=True)
class LogPattern:
    entry_id: str
    name: str
    pattern: str
    literal: str
    ignore_case: bool
    source: str
    versions: str
    rank_is: str = "global"
    follows: bool = False  # a continuation line: looked for only right after a line of the same entry
    # A completion marker: it counts only as the first line after a line of one of these patterns of the
    # same entry (a save's start), so its literal may be common: lines are searched for it only then.
    after: tuple[str, ...] = ()
    # Other failures print this very message too: alone (no other pattern of the entry in the log) it names
    # the entry only as the likeliest reading, and this text says what else it can be.
    alone: str = ""
    # Runs that finish print this message too (NCCL's INFO line when a peer disconnects at exit): its lines
    # are warnings, and this text says when a healthy run prints it.
    also_healthy: str = ""
    # Printed under a Python warning's header (`file.py:N: UserWarning: ...`) but only while the failure
    # happens (anomaly mode's "Error detected in ..."): its lines stay errors; this text says why.
    warned_on_failure: str = ""

    @property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use: most patterns never meet their literal in a given log."""
        key = (self.pattern, self.ignore_case)
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = re.compile(self.pattern, re.IGNORECASE if self.ignore_case else 0)
        return compiled


@dataclass(frozen=True)
class FixVariant:
    when: Mapping[str, Any]
    text: str


@dataclass(frozen=True)
class Example:
    text: str
    source: str = ""
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    category: str
    severity: Severity
    role: Role
    summary: str
    symptoms: tuple[tuple[str, str], ...]
    root_causes: tuple[str, ...]
    fix: str
    fix_variants: tuple[FixVariant, ...]
    verify_command: str
    verify_success: str
    references: tuple[str, ...]
    patterns: tuple[LogPattern, ...]
    path: Path
    priority: int = 50
    when_it_matters: str = ""
    affected: tuple[str, ...] = ()
    examples_match: tuple[Example, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    check: Mapping[str, str] = field(default_factory=dict)

    @functools.cached_property
    def healthy_too(self) -> frozenset[str]:
        """The names of its patterns whose message runs that finish print too (`also_healthy`)."""
        return frozenset(p.name for p in self.patterns if p.also_healthy)

    @functools.cached_property
    def warned_on_failure(self) -> frozenset[str]:
        """The names of its patterns printed as a Python warning only while the failure happens."""
        return frozenset(p.name for p in self.patterns if p.warned_on_failure)

    @property
    def verify(self) -> str:
        if self.verify_success:
            return f"{self.verify_command}\n# success: {self.verify_success}"
        return self.verify_command


@dataclass(frozen=True)
class LoadProblem:
    path: Path
    field: str
    problem: str
    skipped: bool = True  # False: the entry loaded, but something in it needs attention

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.problem}"


@dataclass
class Library:
    entries: dict[str, Entry]
    problems: list[LoadProblem]

    @functools.cached_property
    def patterns(self) -> tuple[LogPattern, ...]:
        return tuple(p for e in self.entries.values() for p in e.patterns)

    def get(self, entry_id: str) -> Entry | None:
        return self.entries.get(entry_id)

    def __iter__(self) -> Iterator[Entry]:
        return iter(sorted(self.entries.values(), key=lambda e: e.id))
