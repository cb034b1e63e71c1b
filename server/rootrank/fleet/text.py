"""Rows and fleet views -> plain text for a terminal."""

from __future__ import annotations

from rootrank.fleet.record import UNREADABLE, RunResult
from rootrank.fleet.views import FleetSummary

TOP_HOSTS = 10


def render_text(rows: tuple[RunResult, ...], summary: FleetSummary) -> str:
    out: list[str] = []
    name_width = min(40, max((len(r.run) for r in rows), default=4))
    for row in rows:
        if row.status == UNREADABLE:
            out.append(f"{row.run:<{name_width}}  unreadable  {row.error}")
            continue
        if row.rule is None:
            out.append(f"{row.run:<{name_width}}  clean")
            continue
        where = "" if row.rank is None else f"  rank {row.rank}"
        if row.host:
            where += f" on {row.host}" if where else f"  on {row.host}"
        when = f"  {row.time}" if row.time else ""
        decided = f"  ({row.decided_by})" if row.decided_by else ""
        out.append(f"{row.run:<{name_width}}  {row.status:<7}  {row.rule}{where}{when}{decided}")
    out.append("")
    out.append(f"{summary.runs} runs: {summary.failed} failed, {summary.warnings} with warnings, "
               f"{summary.clean} clean, {len(summary.unreadable)} unreadable")
    if summary.by_entry:
        out.append("")
        out.append("Failures by entry:")
        out.extend(f"  {n:>5}  {rule}" for rule, n in summary.by_entry)
    if summary.by_week:
        out.append("")
        out.append("Failures by week:")
        out.extend(f"  {week}  {failed:>5} of {total} runs" for week, failed, total in summary.by_week)
    if summary.hosts:
        out.append("")
        out.append("Initiating hosts (jobs whose failure started there / jobs the logs show there; expected at "
                   "the fleet's rate):")
        for host in summary.hosts[:TOP_HOSTS]:
            ran = f"{host.ran}" if host.ran else "?"
            expected = f"{host.expected:.1f}" if host.expected is not None else "?"
            rules = ", ".join(f"{rule} x{n}" for rule, n in host.rules)
            out.append(f"  {host.host:<16} {host.initiated:>4} / {ran:<4} expected {expected:<5} {rules}")
            out.extend(f"      {run}: {line[:150]}" for run, line in host.evidence[:2])
    if summary.hardware:
        out.append("")
        out.append("Hardware and infrastructure entries per host:")
        out.extend(f"  {host:<16} {rule}  in {n} run{'s' if n != 1 else ''}" for host, rule, n in summary.hardware)
    return "\n".join(out) + "\n"
