"""Diagnosis -> text for a terminal: the root cause first, then why, collateral, fix, verify, timeline."""

from __future__ import annotations

import re
import shutil
import textwrap

from rootrank.model import Diagnosis
from rootrank.redact import redact
from rootrank.render.common import (
    also_seen,
    collateral_groups,
    confidence_text,
    count_text,
    terminal_safe,
    where,
)

LABEL_WIDTH = 14


class _Style:
    def __init__(self, color: bool) -> None:
        self.color = color

    def __call__(self, text: str, code: str) -> str:
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text


def render_text(d: Diagnosis, color: bool = False, raw: bool = False, width: int | None = None) -> str:
    clean = (lambda s: s) if raw else redact
    width = width or min(shutil.get_terminal_size((110, 24)).columns, 140)
    style = _Style(color)
    lines: list[str] = []

    def block(label: str, text: str, code: str = "1", reflow: bool = True) -> None:
        text = terminal_safe(text)  # log lines and file names must not drive the terminal
        body_width = max(width - LABEL_WIDTH, 40)
        first = True
        label = label if len(label) < LABEL_WIDTH else label[: LABEL_WIDTH - 2] + ".."
        for paragraph in (_reflow(text) if reflow else text.splitlines()) or [""]:
            wrapped = textwrap.wrap(paragraph, body_width, subsequent_indent="  " if paragraph[:2] in ("- ", "1.") else "",
                                    replace_whitespace=False, drop_whitespace=True,
                                    break_on_hyphens=False, break_long_words=False) or [""]
            for piece in wrapped:
                head = style(label.ljust(LABEL_WIDTH), code) if first else " " * LABEL_WIDTH
                lines.append(f"{head}{piece}")
                first = False

    root = d.root_cause
    if root is None:
        block("Result", f"no failure found in {d.lines_read} lines", "32;1")
    else:
        code = "31;1" if root.severity.value == "error" else "33;1"
        label = "Root cause" if root.severity.value == "error" else "Finding"
        block(label, f"{where(root.rank, root.host)}  {root.title}  [{root.rule}]", code)
        for e in root.evidence[:3]:
            src = f"{e.source}:" if e.source not in ("-", "") and len(d.sources) > 1 else "line "
            block("", f"{src}{e.line}  {clean(e.text)[:300]}")
        rank_label = f"Why rank {root.rank}" if root.rank is not None and root.rank < 1000 else "Why"
        block(rank_label, clean(root.why) + f" (decided by: {root.decided_by})")
        if root.confidence is not None:
            block("Confidence", confidence_text(root.confidence))
        if d.hypotheses:
            block("Hypotheses", "\n".join(f"- {where(h.rank, None)} {h.rule}: for: {clean(h.evidence_for)}; "
                                           f"against: {clean(h.evidence_against)}" for h in d.hypotheses))
            if d.tell_apart:
                block("Tell apart", d.tell_apart, reflow=False)
        elif d.candidates:
            block("Candidates", "; ".join(f"rank {c.rank}: {c.why}" for c in d.candidates))
    groups = collateral_groups(d)
    if groups:
        block("Collateral", "\n".join(f"ranks {r}: {t} ({rule})" for rule, t, r in groups),
              reflow=False)
    if root is not None:
        block("Fix", clean(root.fix), "36;1")
        block("Verify", root.verify, "36;1", reflow=False)
    seen = also_seen(d)
    if seen:
        block("Also seen", "\n".join(f"{f.title} [{f.rule}] ({count_text(f, d.ranks_seen)})" for f in seen[:12]),
              reflow=False)
    if len(d.ranks_seen) > 1 and d.timeline:
        block("Timeline", _timeline_text(d), reflow=False)
    return "\n".join(lines) + "\n"


def _timeline_text(d: Diagnosis) -> str:
    root_rank = d.root_cause.rank if d.root_cause else None
    per_rank: dict[int | None, list[str]] = {}
    for t in d.timeline:
        marker = "!" if t.role.value == "cause" else "~" if t.role.value == "symptom" else "."
        per_rank.setdefault(t.rank, []).append(f"{marker}{t.rule.split('.', 1)[-1]}@{t.line}")
    rows = []
    for rank in sorted(per_rank, key=lambda r: (r is None, r if r is not None else 0)):
        name = "launcher" if rank is None else f"rank {rank}"
        flag = " <- initiator" if rank == root_rank and rank is not None else ""
        rows.append(f"{name:>9}: {' '.join(per_rank[rank][:6])}{flag}")
    return "\n".join(rows[:40])


_LIST_ITEM = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|```|#|\|)")


def _reflow(text: str) -> list[str]:
    """Join the soft-wrapped lines of Markdown paragraphs so the terminal width decides the wrapping."""
    out: list[str] = []
    in_code = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith("```"):
            in_code = not in_code
            out.append(line)
            continue
        joinable = (out and not in_code and stripped and out[-1].strip() and not _LIST_ITEM.match(line)
                    and not out[-1].strip().startswith("```"))
        if joinable:
            out[-1] = out[-1].rstrip() + " " + stripped
        else:
            out.append(line)
    return out
