"""Markdown that the text inside it cannot hijack: code spans and fences sized to what they hold.

Log lines, captured values, file names and package metadata are written by anyone; shown in Markdown
(reports, hovers, "Copy as Markdown") they must stay text, so a backtick in them can never end the code
around them and let a link or raw HTML through.
"""

from __future__ import annotations

import re

_BACKTICKS = re.compile(r"`+")


def code_span(text: str) -> str:
    """`text` as one Markdown code span, whatever backticks it holds."""
    longest = max((len(run) for run in _BACKTICKS.findall(text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") or not text.strip() else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def fence_for(lines: list[str]) -> str:
    """A code fence longer than any run of backticks in `lines` (at least three)."""
    longest = max((len(run) for line in lines for run in _BACKTICKS.findall(line)), default=0)
    return "`" * max(3, longest + 1)
