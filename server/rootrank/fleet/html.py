"""Rows and fleet views -> one self-contained HTML page: tables and inline SVG plots (failures per
week, hosts ranked by initiated failures). No script, no font, no stylesheet or image from anywhere:
the page opens from a file with the network off, and log text is escaped, never interpreted.
"""

from __future__ import annotations

from html import escape

from rootrank.fleet.record import UNREADABLE, RunResult
from rootrank.fleet.views import FleetSummary

TOP_HOSTS = 15
BAR_FAILED, BAR_RUNS, BAR_RAN = "#c0392b", "#d5dbdb", "#aab7b8"

_STYLE = """
body{font:14px/1.4 system-ui,sans-serif;margin:24px;color:#222}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
table{border-collapse:collapse;margin:8px 0}td,th{border:1px solid #ccc;padding:3px 8px;text-align:left;
vertical-align:top}th{background:#f3f3f3}td.num{text-align:right}code{font-size:12px;word-break:break-all}
.failed{color:#c0392b}.unreadable{color:#7d3c98}.warning{color:#b9770e}.clean{color:#1e8449}
svg text{font:11px system-ui,sans-serif}
"""


def render_html(rows: tuple[RunResult, ...], summary: FleetSummary) -> str:
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'\">",
        f"<title>rootrank scan: {summary.runs} runs</title><style>{_STYLE}</style></head><body>",
        f"<h1>rootrank scan: {summary.runs} runs</h1>",
        f"<p>{summary.failed} failed, {summary.warnings} with warnings, {summary.clean} clean, "
        f"{len(summary.unreadable)} unreadable.</p>",
        "<h2>Failures over time (per ISO week)</h2>", _weeks_svg(summary),
        "<h2>Initiating hosts</h2>",
        "<p>Distinct jobs whose failure started on the host (red), against the jobs the logs show on it "
        "(grey); ranked by how far the red exceeds what the fleet's rate predicts for the grey.</p>", _hosts_svg(summary), _hosts_table(summary),
        "<h2>Failures by entry</h2>", _table(("entry", "failed runs"), [(r, str(n)) for r, n in summary.by_entry]),
    ]
    if summary.hardware:
        parts += ["<h2>Hardware and infrastructure entries per host</h2>",
                  _table(("host", "entry", "runs"), [(h, r, str(n)) for h, r, n in summary.hardware])]
    parts += ["<h2>Runs</h2>", _runs_table(rows), "</body></html>\n"]
    return "\n".join(parts)


def _table(header: tuple[str, ...], body: list[tuple[str, ...]]) -> str:
    head = "".join(f"<th>{escape(h)}</th>" for h in header)
    lines = "".join("<tr>" + "".join(f"<td>{escape(c)}</td>" for c in row) + "</tr>" for row in body)
    return f"<table><tr>{head}</tr>{lines}</table>"


def _weeks_svg(summary: FleetSummary) -> str:
    weeks = summary.by_week
    if not weeks:
        return "<p>No run has a time.</p>"
    width, height, left, bottom = 640, 200, 40, 40
    step = (width - left - 10) / len(weeks)
    top = max(total for _, _, total in weeks) or 1
    scale = (height - bottom - 10) / top
    bars = []
    for i, (week, failed, total) in enumerate(weeks):
        x = left + i * step
        w = max(step * 0.7, 1)
        bars.append(f'<rect class="runs" x="{x:.1f}" y="{height - bottom - total * scale:.1f}" width="{w:.1f}" '
                    f'height="{total * scale:.1f}" fill="{BAR_RUNS}"><title>{week}: {total} runs</title></rect>')
        bars.append(f'<rect class="failed" x="{x:.1f}" y="{height - bottom - failed * scale:.1f}" width="{w:.1f}" '
                    f'height="{failed * scale:.1f}" fill="{BAR_FAILED}"><title>{week}: {failed} failed</title></rect>')
        bars.append(f'<text x="{x + w / 2:.1f}" y="{height - bottom + 14}" text-anchor="middle">{week[5:]}</text>')
    axis = (f'<line x1="{left}" y1="{height - bottom}" x2="{width - 5}" y2="{height - bottom}" stroke="#444"/>'
            f'<text x="4" y="14">{top} runs</text>'
            f'<text x="{left}" y="{height - 6}">red: failed runs; grey: all runs of the week</text>')
    return (f'<svg id="weeks" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'role="img" aria-label="failures per week">{axis}{"".join(bars)}</svg>')


def _hosts_svg(summary: FleetSummary) -> str:
    hosts = summary.hosts[:TOP_HOSTS]
    if not hosts:
        return "<p>No failure names its host.</p>"
    row, left, width = 20, 110, 640
    height = row * len(hosts) + 10
    top = max(max(h.ran, h.initiated) for h in hosts) or 1
    scale = (width - left - 60) / top
    bars = []
    for i, host in enumerate(hosts):
        y = 5 + i * row
        bars.append(f'<text x="{left - 6}" y="{y + 13}" text-anchor="end">{escape(host.host)}</text>')
        bars.append(f'<rect class="ran" x="{left}" y="{y + 2}" width="{host.ran * scale:.1f}" height="{row - 6}" '
                    f'fill="{BAR_RAN}"><title>{host.ran} jobs ran there</title></rect>')
        bars.append(f'<rect class="initiated" x="{left}" y="{y + 2}" width="{host.initiated * scale:.1f}" '
                    f'height="{row - 6}" fill="{BAR_FAILED}"><title>{host.initiated} failures started there'
                    f'</title></rect>')
        ran = str(host.ran) if host.ran else "?"
        bars.append(f'<text x="{left + max(host.ran, host.initiated) * scale + 6:.1f}" y="{y + 13}">'
                    f'{host.initiated} / {ran}</text>')
    return (f'<svg id="hosts" xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
            f'role="img" aria-label="initiating hosts">{"".join(bars)}</svg>')


def _hosts_table(summary: FleetSummary) -> str:
    body = []
    for host in summary.hosts[:TOP_HOSTS]:
        share = f"{host.share:.0%}" if host.share is not None else "?"
        expected = f"{host.expected:.1f}" if host.expected is not None else "?"
        rules = ", ".join(f"{r} x{n}" for r, n in host.rules)
        evidence = "<br>".join(f"{escape(run)}: <code>{escape(line)}</code>" for run, line in host.evidence)
        body.append(f"<tr><td>{escape(host.host)}</td><td class=num>{host.initiated}</td>"
                    f"<td class=num>{host.ran or '?'}</td><td class=num>{expected}</td><td class=num>{share}</td>"
                    f"<td>{escape(rules)}</td>"
                    f"<td>{evidence}</td></tr>")
    return ("<table><tr><th>host</th><th>initiated</th><th>ran</th><th>expected</th><th>share</th><th>entries</th>"
            f"<th>evidence</th></tr>{''.join(body)}</table>")


def _runs_table(rows: tuple[RunResult, ...]) -> str:
    body = []
    for row in rows:
        if row.status == UNREADABLE:
            what = escape(row.error or "")
        elif row.rule is None:
            what = ""
        else:
            what = (f"{escape(row.rule)} on rank {row.rank if row.rank is not None else '?'}"
                    f"{' (' + escape(row.host) + ')' if row.host else ''}"
                    f"{' &middot; ' + escape(row.decided_by) if row.decided_by else ''}")
        body.append(f"<tr><td>{escape(row.run)}</td><td class=\"{row.status}\">{row.status}</td><td>{what}</td>"
                    f"<td>{escape(row.time or '')}</td><td><code>{escape(row.evidence)}</code></td></tr>")
    return ("<table><tr><th>run</th><th>status</th><th>diagnosis</th><th>time</th><th>evidence</th></tr>"
            f"{''.join(body)}</table>")
