"""Diagnosis -> Markdown, for reports, issues, chats and the editor."""

from __future__ import annotations

from rootrank.mdsafe import fence_for
from rootrank.model import Diagnosis
from rootrank.redact import redact
from rootrank.render.common import (
    also_seen,
    collateral_groups,
    confidence_text,
    count_text,
    where,
)


def render_markdown(d: Diagnosis, raw: bool = False) -> str:
    clean = (lambda s: s) if raw else redact
    root = d.root_cause
    out: list[str] = []
    if root is None:
        out.append("## No failure found")
        out.append(f"rootrank read {d.lines_read} lines and found no failure it knows.")
    else:
        label = "Root cause" if root.severity.value == "error" else "Most important finding"
        out.append(f"## {label}: {root.title} — {where(root.rank, root.host)}")
        out.append(f"`{root.rule}` · severity **{root.severity.value}** · decided by: {root.decided_by}")
        if root.evidence:
            out.append("### Evidence")
            # Log lines are shown as text, never read as Markdown: the fence outlasts any backticks in them.
            shown = [f"{e.source}:{e.line}: " if e.source not in ("-", "") else f"line {e.line}: " for e in root.evidence]
            shown = [head + clean(e.text) for head, e in zip(shown, root.evidence, strict=True)]
            fence = fence_for(shown)
            out.extend([f"{fence}text", *shown, fence])
        out.append("### Why this rank")
        out.append(clean(root.why) or "—")
        if root.confidence is not None:
            out.append(f"**Confidence:** {clean(confidence_text(root.confidence))}")
        if d.hypotheses:
            out.append("### Hypotheses")
            out.extend(f"- {where(h.rank, None)}, `{h.rule}` — for: {clean(h.evidence_for)}; against: "
                       f"{clean(h.evidence_against)}" for h in d.hypotheses)
            if d.tell_apart:
                out.append("To tell them apart (read-only):\n```sh\n" + d.tell_apart + "\n```")
        elif d.candidates:
            out.append("Other candidates: " + "; ".join(f"rank {c.rank} ({c.rule}: {c.why})" for c in d.candidates))
    groups = collateral_groups(d)
    if groups:
        out.append("### Collateral")
        for rule, title, ranks in groups:
            out.append(f"- ranks {ranks}: {title} (`{rule}`)")
    if root is not None:
        out.append("### Fix")
        out.append(clean(root.fix))
        out.append("### Verify")
        out.append("```sh\n" + root.verify + "\n```")
        if root.references:
            out.append("### References")
            out.extend(f"- {r}" for r in root.references)
    seen = also_seen(d)
    if seen:
        out.append("### Also seen")
        out.extend(f"- {f.title} (`{f.rule}`, {count_text(f, d.ranks_seen)})" for f in seen)
    if d.timeline:
        out.append("### Timeline")
        out.append("| order | rank | what | line |")
        out.append("|---:|---:|---|---:|")
        for t in d.timeline[:40]:
            rank = "-" if t.rank is None else str(t.rank)
            out.append(f"| {t.order} | {rank} | {t.rule} ({t.role.value}) | {t.line} |")
    return "\n\n".join(out).replace("\n\n- ", "\n- ") + "\n"
