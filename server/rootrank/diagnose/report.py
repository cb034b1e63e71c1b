"""Assembling the `Diagnosis`: root cause with evidence and reasons, collateral ranks, findings, timeline."""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import replace

from rootrank.diagnose.collect import Collected
from rootrank.diagnose.confidence import Assessor
from rootrank.diagnose.enrich import enrich
from rootrank.diagnose.fixtext import render_fix
from rootrank.diagnose.initiator import (
    CollateralRanks,
    InitiatorFinder,
    Verdict,
    collateral_by_rank,
    host_of,
    named_host,
)
from rootrank.diagnose.launcher import LauncherReport
from rootrank.diagnose.resume import SAVE_RULE, interrupted_save, resume_note
from rootrank.library import Library
from rootrank.model import (
    Candidate,
    Collateral,
    CollateralRanges,
    Diagnosis,
    Event,
    Evidence,
    FindingSummary,
    Hypothesis,
    Role,
    RootCause,
    Severity,
    TimelineItem,
)
from rootrank.ranks import RankSet

MAX_EVIDENCE = 6
MAX_TIMELINE_PER_RANK = 6
MAX_TIMELINE = 600
# Collateral ranks listed one by one; all of them are in `collateral_ranges` (a 1M-rank job's JSON was 207 MB).
MAX_COLLATERAL_LISTED = 64


def build_diagnosis(collected: Collected, launcher: LauncherReport, library: Library) -> Diagnosis:
    finder = InitiatorFinder(collected, launcher)
    verdict = finder.decide()
    collateral = collateral_by_rank(collected, verdict, finder)
    root = _root_cause(verdict, collected, collateral, library)
    hypotheses: tuple[Hypothesis, ...] = ()
    command = ""
    if root is not None:
        assessor = Assessor(collected, finder, library)
        confidence = assessor.confidence(verdict)
        root = replace(root, confidence=confidence)
        hypotheses, command = assessor.hypotheses(verdict, confidence)
    findings = _findings(collected, library, verdict.cause, finder.amp_warmup)
    ranks_seen = collected.ranks_seen | collateral.ranks()
    if verdict.rank is not None:
        ranks_seen.add(verdict.rank)
    if len(launcher.agents) <= 1:
        ranks_seen.update(r for r in (finder.global_rank(None, lr) for lr in collected.local_ranks_seen) if r is not None)
    return Diagnosis(
        root_cause=root,
        candidates=tuple(Candidate(r, rule, why) for r, rule, why in verdict.candidates if r >= 0),
        collateral=tuple(Collateral(rank, e.rule, e.line.number, _title(library, e.rule))
                         for rank, e in collateral.lowest(MAX_COLLATERAL_LISTED)),
        collateral_ranges=_collateral_ranges(collateral, library),
        collateral_count=len(collateral),
        findings=findings,
        ranks_seen=ranks_seen.freeze(),
        timeline=_timeline(collected, finder),
        lines_read=collected.lines,
        sources=tuple(collected.sources),
        undecided=verdict.undecided,
        hypotheses=hypotheses,
        tell_apart=command,
    )


def _collateral_ranges(collateral: CollateralRanks, library: Library) -> tuple[CollateralRanges, ...]:
    """The collateral ranks grouped by what they suffered, in the order the entries were first seen."""
    return tuple(CollateralRanges(rule, _title(library, rule), ranks.text(), len(ranks), event.line.number)
                 for rule, (ranks, event) in collateral.by_rule.items())


def _title(library: Library, rule: str) -> str:
    entry = library.get(rule)
    return entry.title if entry else rule


def _root_cause(verdict: Verdict, collected: Collected, collateral: CollateralRanks,
                library: Library) -> RootCause | None:
    if verdict.rule is None:
        return None
    cause = verdict.cause
    entry = library.get(verdict.rule)
    if entry is None and cause is not None:
        # A library without the entry the rank signals point at still names what was observed.
        entry = library.get(cause.rule)
    if entry is None:
        return None
    fields = dict(cause.fields) if cause is not None and cause.rule == entry.id else {}
    if cause is not None and verdict.rule != cause.rule:
        # The failure is named by the rank signals (e.g. a stalled rank); keep the observed numbers.
        fields.update({k: v for k, v in cause.fields.items() if k not in fields})
    if verdict.rank is not None:
        fields.setdefault("rank", str(verdict.rank))
    fields = enrich(entry.id, fields)
    evidence = _evidence(verdict, collateral)
    why = _why(verdict, collateral, library)
    severity = entry.severity
    if cause is not None and cause.severity is not Severity.ERROR and entry.id == cause.rule:
        severity = cause.severity
    if verdict.decided_by == InitiatorFinder.STOPPED_AFTER_WARNING:
        severity = Severity.ERROR  # the process stopped right after the warning
    host = verdict.host or (collected.hosts.get(verdict.rank) if verdict.rank is not None else None)
    if host is None and cause is not None:
        if cause.rank == verdict.rank or (cause.rank is None and "peer" not in cause.fields):
            host = host_of(cause)
        elif "peer" in cause.fields:
            # Another process's line names the rank: only a host its text names is that rank's (mpirun's
            # `... rank 2 with PID 9631 on node node-b`), not the host the line was printed on.
            host = named_host(cause)
    return RootCause(
        rule=entry.id,
        title=entry.title,
        severity=severity,
        rank=verdict.rank,
        host=host,
        line=cause.line.number if cause is not None else 0,
        evidence=evidence,
        why=why,
        fix="\n\n".join(p for p in (resume_note(collected, cause, library),
                                     render_fix(entry, collected.stacks, fields)) if p),
        verify=entry.verify,
        references=entry.references,
        source=cause.line.source if cause is not None else "-",
        fields=fields,
        decided_by=verdict.decided_by,
    )


def _evidence(verdict: Verdict, collateral: CollateralRanks) -> tuple[Evidence, ...]:
    items: list[Evidence] = []
    seen: set[tuple[str, int]] = set()

    def add(event: Event) -> None:
        key = (event.line.source, event.line.number)
        if key in seen or len(items) >= MAX_EVIDENCE:
            return
        seen.add(key)
        items.append(Evidence(event.line.number, event.line.rank, event.line.raw.strip()[:2000], event.line.source))

    if verdict.cause is not None:
        add(verdict.cause)
    for event in itertools.islice(collateral.events(), 3):
        add(event)
    return tuple(items)


def _suffered(library: Library, event: Event) -> str:
    """What a collateral rank went through: its entry's title; for a rank known only from the launcher's
    table (it printed nothing of its own), that the launcher stopped it."""
    if event.role is Role.CONTEXT:
        return "stopped by the launcher's teardown (in its failure table; nothing of their own in the log)"
    return _title(library, event.rule)


def _why(verdict: Verdict, collateral: CollateralRanks, library: Library) -> str:
    parts = list(verdict.reasons)
    if verdict.undecided:
        parts.append(verdict.undecided)
    if collateral:
        by_rule = collateral.by_rule
        suffered = "; ".join(f"rank(s) {ranks.text()}: {_suffered(library, event)}"
                             for _, (ranks, event) in sorted(by_rule.items(), key=lambda kv: kv[1][0].first() or 0))
        parts.append(f"then {suffered}")
    text = "; ".join(parts)
    return text[:1].upper() + text[1:] + ("." if text and not text.endswith(".") else "")


def _findings(collected: Collected, library: Library, failure: Event | None,
              warmup: Callable[[Event], bool]) -> tuple[FindingSummary, ...]:
    out = []
    for rule, count in collected.counts.items():
        entry = library.get(rule)
        if entry is None or count.first is None:
            continue
        if rule == SAVE_RULE and interrupted_save(collected, failure) is None:
            continue  # saves that started and finished, or no failure to interrupt them: nothing to report
        severity = entry.severity
        last = count.last or count.first
        if count.first.severity is not Severity.ERROR and last.severity is not Severity.ERROR:
            severity = count.first.severity  # its lines were warnings of the process's own (a Python warning)
        elif warmup(count.first):
            severity = Severity.WARNING  # fp16 AMP's first skipped steps, not a divergence
        out.append(FindingSummary(rule=rule, title=entry.title, severity=severity, role=entry.role,
                                  rank=count.first.rank, line=count.first.line.number, count=count.count,
                                  ranks=RankSet(count.ranks).freeze()))
    return tuple(sorted(out, key=lambda f: f.line))


def _timeline(collected: Collected, finder: InitiatorFinder) -> tuple[TimelineItem, ...]:
    per_rank: dict[int | None, int] = {}
    items: list[TimelineItem] = []
    for event in sorted(collected.units, key=lambda e: e.order):
        if event.line.quoted and event.role is not Role.CAUSE:
            continue
        rank = finder.event_rank(event)
        if per_rank.get(rank, 0) >= MAX_TIMELINE_PER_RANK:
            continue
        per_rank[rank] = per_rank.get(rank, 0) + 1
        items.append(TimelineItem(rank=rank, rule=event.rule, role=event.role, line=event.line.number,
                                  order=event.order, time=event.line.time, text=event.line.text.strip()[:300]))
        if len(items) >= MAX_TIMELINE:
            break
    return tuple(items)
