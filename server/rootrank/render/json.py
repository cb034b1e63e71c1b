"""Diagnosis -> JSON (schema `rootrank.diagnosis/2`), the contract other tools rely on."""

from __future__ import annotations

from typing import Any

from rootrank.model import Diagnosis
from rootrank.redact import redact

SCHEMA = "rootrank.diagnosis/2"


def diagnosis_to_json(d: Diagnosis, raw: bool = False) -> dict[str, Any]:
    clean = (lambda s: s) if raw else redact
    root = d.root_cause
    return {
        "schema": SCHEMA,
        "root_cause": None if root is None else {
            "rule": root.rule,
            "title": root.title,
            "severity": root.severity.value,
            "rank": root.rank,
            "host": root.host,
            "line": root.line,
            "source": root.source,
            "evidence": [{"line": e.line, "rank": e.rank, "text": clean(e.text), "source": e.source}
                         for e in root.evidence],
            "why": clean(root.why),
            "decided_by": root.decided_by,
            "fix": clean(root.fix),
            "verify": root.verify,
            "references": list(root.references),
            "fields": {k: clean(v) for k, v in sorted(root.fields.items())},
            "confidence": None if root.confidence is None else {
                "failure": {"level": root.confidence.failure.level, "reason": clean(root.confidence.failure.reason)},
                "rank": {"level": root.confidence.rank.level, "reason": clean(root.confidence.rank.reason)},
            },
        },
        "undecided": d.undecided or None,
        "hypotheses": [{"rank": h.rank, "rule": h.rule, "for": clean(h.evidence_for), "against": clean(h.evidence_against)}
                       for h in d.hypotheses],
        "tell_apart": d.tell_apart or None,
        "candidates": [{"rank": c.rank, "rule": c.rule, "why": c.why} for c in d.candidates],
        # The first ranks one by one (at most 64, lowest first); every rank, compact, in collateral_ranges.
        "collateral": [{"rank": c.rank, "rule": c.rule, "line": c.line, "title": c.title} for c in d.collateral],
        "collateral_count": d.collateral_count or len(d.collateral),
        "collateral_ranges": [{"rule": g.rule, "title": g.title, "ranks": g.ranks, "count": g.count, "line": g.line}
                              for g in d.collateral_ranges],
        "findings": [{"rule": f.rule, "title": f.title, "severity": f.severity.value, "role": f.role.value,
                      "rank": f.rank, "line": f.line, "count": f.count, "ranks": f.ranks.text(),
                      "rank_count": len(f.ranks)}
                     for f in d.findings],
        # Ranges at any size (a million ranks: "0-999999"), and how many.
        "ranks_seen": d.ranks_seen.text(),
        "ranks_seen_count": len(d.ranks_seen),
        "timeline": [{"rank": t.rank, "rule": t.rule, "role": t.role.value, "line": t.line, "order": t.order,
                      "time": t.time, "text": clean(t.text)} for t in d.timeline],
        "lines_read": d.lines_read,
        "sources": list(d.sources),
    }
