"""Fleet views over the rows of a scan: failures by entry and by week, hosts ranked by the failures
they initiated, hardware- and infrastructure-class entries per host.

A node that keeps starting failures is told from one that merely runs many jobs by counting, per
host, the distinct jobs whose initiating rank ran there against the jobs that ran there at all (when
the logs name the hosts), and ranking by the excess over what the fleet's rate predicts: `initiated -
ran x rate`, the rate being initiations per (job, host) pair over the fleet. A busy host with the
fleet's usual rate has an excess near zero however many jobs it ran; a host that starts failures in
more of its jobs than the others has a clear positive one. Hosts no log says ran anything are ranked
by their initiations alone.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass

from rootrank.fleet.record import FAILED, UNREADABLE, RunResult

EVIDENCE_PER_HOST = 5


@dataclass(frozen=True, slots=True)
class HostRank:
    host: str
    initiated: int  # distinct failed runs whose initiating rank ran on this host
    ran: int  # runs whose logs show this host (0 when no log names its hosts)
    expected: float | None  # initiations the fleet's rate predicts for `ran` jobs (None: ran unknown)
    rules: tuple[tuple[str, int], ...]  # the entries it initiated, most frequent first
    evidence: tuple[tuple[str, str], ...]  # (run, evidence line), the first few

    @property
    def share(self) -> float | None:
        return self.initiated / self.ran if self.ran else None

    @property
    def excess(self) -> float:
        return self.initiated - (self.expected or 0.0)


@dataclass(frozen=True, slots=True)
class FleetSummary:
    runs: int
    failed: int
    clean: int
    warnings: int
    unreadable: tuple[RunResult, ...]
    by_entry: tuple[tuple[str, int], ...]  # entry id -> failed runs, most frequent first
    by_week: tuple[tuple[str, int, int], ...]  # ISO week ("2026-W48") -> (failed runs, runs), in order
    hosts: tuple[HostRank, ...]  # ranked by excess initiations, the most suspicious first
    hardware: tuple[tuple[str, str, int], ...]  # (host, entry id, runs), by host


def summarize_fleet(rows: list[RunResult]) -> FleetSummary:
    failed = [r for r in rows if r.status == FAILED]
    by_entry = Counter(r.rule for r in failed if r.rule)
    weeks: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for row in rows:
        week = _week(row.time)
        if week is None or row.status == UNREADABLE:
            continue
        weeks[week][1] += 1
        weeks[week][0] += row.failed
    hardware: Counter[tuple[str, str]] = Counter()
    for row in rows:
        for finding in row.hardware:
            for host in finding.hosts:
                hardware[(host, finding.rule)] += 1
    return FleetSummary(
        runs=len(rows), failed=len(failed), clean=sum(r.status == "clean" for r in rows),
        warnings=sum(r.status == "warning" for r in rows),
        unreadable=tuple(r for r in rows if r.status == UNREADABLE),
        by_entry=tuple(sorted(by_entry.items(), key=lambda kv: (-kv[1], kv[0]))),
        by_week=tuple((w, n[0], n[1]) for w, n in sorted(weeks.items())),
        hosts=rank_hosts(rows),
        hardware=tuple((h, rule, n) for (h, rule), n in sorted(hardware.items())))


def rank_hosts(rows: list[RunResult]) -> tuple[HostRank, ...]:
    ran: Counter[str] = Counter()
    for row in rows:
        for host in set(row.hosts):
            ran[host] += 1
    initiated: dict[str, list[RunResult]] = defaultdict(list)
    for row in rows:
        if row.status == FAILED and row.host:
            initiated[row.host].append(row)
    known = [r for r in rows if r.hosts and r.status != UNREADABLE]
    pairs = sum(len(r.hosts) for r in known)
    rate = sum(1 for r in known if r.status == FAILED and r.host) / pairs if pairs else 0.0
    ranked = []
    for host, failures in initiated.items():
        jobs = {r.run for r in failures}
        rules = Counter(r.rule or "" for r in failures)
        ran_there = max(ran[host], len(jobs)) if ran[host] else 0
        ranked.append(HostRank(
            host=host, initiated=len(jobs), ran=ran_there, expected=ran_there * rate if ran_there else None,
            rules=tuple(sorted(rules.items(), key=lambda kv: (-kv[1], kv[0]))),
            evidence=tuple((r.run, r.evidence) for r in sorted(failures, key=lambda r: r.run)[:EVIDENCE_PER_HOST])))
    return tuple(sorted(ranked, key=lambda h: (-round(h.excess, 9), -h.initiated, h.host)))


def _week(stamp: str | None) -> str | None:
    if not stamp:
        return None
    try:
        at = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None
    year, week, _ = at.isocalendar()
    return f"{year}-W{week:02d}"
