"""Pieces every human-facing rendering shares: grouped collateral, "also seen", rank lists, and text made
safe for a terminal."""

from __future__ import annotations

import re

from rootrank.model import Confidence, Diagnosis, FindingSummary, ranks_text
from rootrank.ranks import RankSet

__all__ = ["also_seen", "collateral_groups", "confidence_text", "count_text", "ranks_text", "terminal_safe", "where"]

# What a terminal would act on instead of showing: C0 controls but tab and newline, ESC and DEL, the C1
# controls (U+009B is a CSI, U+009D an OSC on their own), and the bidirectional overrides and isolates
# that make text read differently from what it is.
_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def terminal_safe(text: str) -> str:
    """`text` with every control character a terminal would interpret written out as an escape (`\\x1b`)."""
    return _UNSAFE.sub(_escaped, text)


def _escaped(m: re.Match[str]) -> str:
    code = ord(m.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def collateral_groups(d: Diagnosis) -> list[tuple[str, str, str]]:
    """(rule, title, ranks as text) for each symptom the collateral ranks suffered, first-seen order: from
    `collateral_ranges`, which covers every rank where `collateral` lists only the first ones."""
    if d.collateral_ranges:
        return [(g.rule, g.title or g.rule, g.ranks) for g in d.collateral_ranges]
    groups: dict[str, tuple[str, list[int]]] = {}
    for c in d.collateral:
        groups.setdefault(c.rule, (c.title or c.rule, []))[1].append(c.rank)
    return [(rule, title, ranks_text(ranks)) for rule, (title, ranks) in groups.items()]


def also_seen(d: Diagnosis) -> list[FindingSummary]:
    root_rule = d.root_cause.rule if d.root_cause else None
    collateral_rules = {c.rule for c in d.collateral} | {g.rule for g in d.collateral_ranges}
    return [f for f in d.findings if f.rule != root_rule and f.rule not in collateral_rules]


def where(rank: int | None, host: str | None) -> str:
    if rank is None:
        return host or "no rank (single process or unprefixed output)"
    return f"rank {rank}" + (f" ({host})" if host else "")


def count_text(f: FindingSummary, all_ranks: RankSet) -> str:
    if f.ranks and len(f.ranks) > 1:
        scope = "all ranks" if f.ranks >= all_ranks and len(all_ranks) > 1 else f"ranks {f.ranks.text()}"
    elif f.ranks:
        scope = f"rank {f.ranks.first()}"
    else:
        scope = ""
    return f"x{f.count}" + (f", {scope}" if scope else "")


def confidence_text(conf: Confidence | None) -> str:
    """`failure high (reason); rank medium (reason)`, as every format says it."""
    if conf is None:
        return ""
    return f"failure {conf.failure.level} ({conf.failure.reason}); rank {conf.rank.level} ({conf.rank.reason})"
