"""What one `check` of one file may cost: how much text is parsed, how far YAML aliases may expand, how
many findings are kept, and the cooperative cancellation a front end uses to stop work on a stale text.

`ast` keeps about 200-310 bytes of objects per byte of source and PyYAML's node graph is heavier still,
so a file past `MAX_PARSE_CHARS` is not parsed at all: the check returns one `file-skipped` finding that
the CLI turns into one line and exit code 2, and the language server into a diagnostic. An alias bomb
(a 1.5 KB YAML whose anchors expand to billions of nodes) is measured on the composed node graph, where
aliases are shared, before anything is constructed or walked.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rootrank.model import Finding, Severity

# Characters of one file (Python, a notebook's code cells, a config) that are parsed; 2 MiB of text is
# about 40k lines, twenty times the largest training scripts we know, and costs a few hundred MiB to parse.
MAX_PARSE_CHARS = 2 << 20
# Nodes that YAML aliases may add to a document beyond its own (a merge key `<<: *base` adds the base's).
MAX_ALIAS_EXPANSION = 100_000
# Findings kept per file: a machine-written file can repeat one mistake without end.
MAX_FINDINGS_PER_FILE = 10_000

SKIPPED = "file-skipped"

Cancelled = Callable[[], bool]


class CheckCancelledError(Exception):
    """Raised out of `check_source` when its `cancelled()` says the caller no longer wants the result."""


def stop_if(cancelled: Cancelled | None) -> None:
    if cancelled is not None and cancelled():
        raise CheckCancelledError


def skipped(path: str, reason: str) -> Finding:
    """The one finding of a file that was not checked, and why."""
    return Finding(SKIPPED, Severity.WARNING, path, 1, 1, 1, 1, f"not checked: {reason}")


def over_parse_cap(text: str, what: str) -> str | None:
    """Why `text` is too large to parse, or None."""
    if len(text) <= MAX_PARSE_CHARS:
        return None
    return (f"{_mib(len(text))} of {what} is over the {_mib(MAX_PARSE_CHARS)} rootrank parses per file "
            "(parsing costs a few hundred times the text in memory)")


def _mib(chars: int) -> str:
    value = chars / (1 << 20)
    return f"{value:.0f} MiB" if value >= 10 or value == int(value) else f"{value:.1f} MiB"


def alias_expansion(root: Any, budget: int = MAX_ALIAS_EXPANSION, cancelled: Cancelled | None = None) -> str | None:
    """Why a composed YAML node graph expands too far through its aliases, or None.

    Each distinct node is visited once (post-order, iteratively: no recursion limit) and its expanded
    size is computed from its children's, so the cost is linear in the file even when the expansion is
    exponential. A node that contains itself (`&a [*a]`) never finishes expanding: refused too.
    """
    import yaml

    sizes: dict[int, int] = {}
    on_path: set[int] = set()
    distinct = 0
    stack: list[tuple[Any, bool]] = [(root, False)]
    while stack:
        node, children_done = stack.pop()
        key = id(node)
        if children_done:
            on_path.discard(key)
            total = 1
            for child in _children(node, yaml):
                total += sizes[id(child)]
            sizes[key] = total
            if total - distinct > budget:
                return f"its anchors and aliases expand to more than {budget} nodes beyond its own (an alias bomb?)"
            continue
        if key in sizes:
            continue
        if key in on_path:
            return "an anchor contains an alias of itself (a recursive document)"
        distinct += 1
        if not distinct % 4096:
            stop_if(cancelled)
        on_path.add(key)
        stack.append((node, True))
        stack.extend((child, False) for child in _children(node, yaml) if id(child) not in sizes)
    return None


def _children(node: Any, yaml: Any) -> list[Any]:
    if isinstance(node, yaml.MappingNode):
        return [part for pair in node.value for part in pair]
    if isinstance(node, yaml.SequenceNode):
        return list(node.value)
    return []
