"""Pieces every human-facing rendering shares: grouped collateral, "also seen", rank lists."""

from __future__ import annotations

from rootrank.model import Confidence, Diagnosis, FindingSummary, ranks_text

__all__ = ["also_seen", "collateral_groups", "confidence_text", "count_text", "ranks_text", "where"]


def collateral_groups(d: Diagnosis) -> list[tuple[str, str, list[int]]]:
    """(rule, title, ranks) for each symptom the collateral ranks suffered, first-seen order."""
    groups: dict[str, tuple[str, list[int]]] = {}
    for c in d.collateral:
        groups.setdefault(c.rule, (c.title or c.rule, []))[1].append(c.rank)
    return [(rule, title, ranks) for rule, (title, ranks) in groups.items()]


def also_seen(d: Diagnosis) -> list[FindingSummary]:
    root_rule = d.root_cause.rule if d.root_cause else None
    collateral_rules = {c.rule for c in d.collateral}
    return [f for f in d.findings if f.rule != root_rule and f.rule not in collateral_rules]


def where(rank: int | None, host: str | None) -> str:
    if rank is None:
        return host or "no rank (single process or unprefixed output)"
    return f"rank {rank}" + (f" ({host})" if host else "")


def count_text(f: FindingSummary, all_ranks: tuple[int, ...]) -> str:
    if f.ranks and len(f.ranks) > 1:
        scope = "all ranks" if set(f.ranks) >= set(all_ranks) and len(all_ranks) > 1 else f"ranks {ranks_text(f.ranks)}"
    elif f.ranks:
        scope = f"rank {f.ranks[0]}"
    else:
        scope = ""
    return f"x{f.count}" + (f", {scope}" if scope else "")


def confidence_text(conf: Confidence | None) -> str:
    """`failure high (reason); rank medium (reason)`, as every format says it."""
    if conf is None:
        return ""
    return f"failure {conf.failure.level} ({conf.failure.reason}); rank {conf.rank.level} ({conf.rank.reason})"
