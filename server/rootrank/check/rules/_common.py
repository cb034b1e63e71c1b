"""Helpers shared by the reentrant-* rules: where the file does something, said as "line N"."""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation
from rootrank.check.semantic import CheckpointSite, Semantic


def at_line(node: ast.AST) -> str:
    return f"line {getattr(node, 'lineno', '?')}"


def report_sites(semantic: Semantic, sites: Iterator[CheckpointSite] | list[CheckpointSite],
                 message: str) -> Iterator[Violation]:
    """One violation per reentrant site, each with the switch-to-non-reentrant fix."""
    for site in sites:
        text = message.format(api=site.api)
        yield Violation(site.call.func, text, edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api)))
