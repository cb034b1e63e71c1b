"""Filling an entry's fix with what the log showed: the variants for the user's stack, captured numbers.

A sentence or list item whose `{placeholder}` has no value in this log is left out rather than shown
with a hole, so entries can say "the step asked for {requested}" without a fallback for every field.

Captured values come from the log, which anyone can write: they are never Markdown. A value inside a
code span or block gets a fence longer than any run of backticks in it; a value in prose that holds
anything Markdown or HTML could read becomes a code span of its own. Only the entry's own links are links.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rootrank.library import Entry, FixVariant
from rootrank.mdsafe import code_span, fence_for

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_UNIT_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|```|\||>)")
_BACKTICK_RUN = re.compile(r"`+")
_PLAIN = re.compile(r"[\w .,:;/+=%@-]*")  # nothing Markdown or HTML gives a meaning to
_FENCE = re.compile(r"^(\s*)(`{3,})(.*)$")


def variant_applies(variant: FixVariant, stacks: set[str], fields: Mapping[str, str]) -> bool:
    when = variant.when
    stack = when.get("stack")
    if stack is not None:
        wanted = {stack} if isinstance(stack, str) else set(stack)
        if not wanted & stacks:
            return False
    field = when.get("field")
    if field is not None and not fields.get(str(field)):
        return False
    flag = when.get("flag")
    return not (flag is not None and fields.get(str(flag)) != "true")


def fill(text: str, fields: Mapping[str, str]) -> str:
    """Substitute placeholders; drop the sentences and list items that name a field the log lacks."""
    units: list[list[str]] = []
    in_code = False
    for line in text.splitlines():
        starts_unit = (not units or not line.strip() or _UNIT_START.match(line) is not None or in_code
                       or not units[-1] or not units[-1][-1].strip()
                       or units[-1][-1].rstrip().endswith((".", ":", "!", "?", "```")))
        if line.strip().startswith("```"):
            in_code = not in_code
        if starts_unit:
            units.append([line])
        else:
            units[-1].append(line)
    out: list[str] = []
    for unit in units:
        joined = "\n".join(unit)
        names = _PLACEHOLDER.findall(joined)
        if any(not fields.get(n) for n in names):
            continue
        out.append(joined)
    return _substitute(re.sub(r"\n{3,}", "\n\n", _renumbered("\n".join(out))).strip(), fields)


_NUMBERED = re.compile(r"^(\s*)(\d+)([.)]\s)")


def _renumbered(text: str) -> str:
    """Numbered list items counted again from 1, so that a step left out leaves no gap ("1., 3.")."""
    lines = text.split("\n")
    counters: dict[int, int] = {}  # indentation of a list's markers -> its last number
    in_code = False
    for i, line in enumerate(lines):
        if line.strip().startswith("```"):
            in_code = not in_code
        if in_code:
            continue
        m = _NUMBERED.match(line)
        indent = len(line) - len(line.lstrip())
        if m is None:
            if line.strip():
                # A line at or left of a list's markers ends that list; an indented one continues an item.
                counters = {level: n for level, n in counters.items() if level < indent}
            continue
        counters = {level: n for level, n in counters.items() if level <= indent}
        number = counters.get(indent, 0) + 1
        counters[indent] = number
        lines[i] = f"{m[1]}{number}{m[3]}{line[m.end():]}"
    return "\n".join(lines)


def _substitute(text: str, fields: Mapping[str, str]) -> str:
    """Placeholders filled so that no captured value can open or close Markdown of its own."""
    def value(m: re.Match[str]) -> str:
        return fields[m.group(1)]

    def prose(piece: str) -> str:
        def safe(m: re.Match[str]) -> str:
            v = fields[m.group(1)]
            return v if _PLAIN.fullmatch(v) else code_span(v)
        return _PLACEHOLDER.sub(safe, piece)

    out: list[str] = []
    block: list[str] | None = None  # the lines of a fenced block being filled
    for line in text.split("\n"):
        fence = _FENCE.match(line)
        if block is None and fence:
            block = [line]
            continue
        if block is not None:
            if fence and not fence.group(3).strip():
                out.extend(_refenced(block, line))
                block = None
            else:
                block.append(_PLACEHOLDER.sub(value, line))
            continue
        pieces: list[str] = []
        last = 0
        for start, inner, end in _code_spans(line):
            pieces.append(prose(line[last:start]))
            content = line[inner[0]: inner[1]]
            pieces.append(code_span(_PLACEHOLDER.sub(value, content)) if _PLACEHOLDER.search(content)
                          else line[start:end])
            last = end
        pieces.append(prose(line[last:]))
        out.append("".join(pieces))
    if block is not None:  # an unclosed block in the entry: close it, as Markdown would at the end
        out.extend(_refenced(block, block[0].split("`")[0] + "```"))
    return "\n".join(out)


def _code_spans(line: str) -> list[tuple[int, tuple[int, int], int]]:
    """(start, (content start, content end), end) of each code span: a run of backticks closed by the
    next run of the same length (CommonMark), found in one pass over the runs."""
    runs = [(m.start(), m.end()) for m in _BACKTICK_RUN.finditer(line)]
    later: dict[int, list[int]] = {}  # run length -> indexes of the runs of that length, last first
    for index in range(len(runs) - 1, -1, -1):
        later.setdefault(runs[index][1] - runs[index][0], []).append(index)
    spans: list[tuple[int, tuple[int, int], int]] = []
    index = 0
    while index < len(runs):
        start, stop = runs[index]
        same = later[stop - start]
        while same and same[-1] <= index:
            same.pop()
        if not same:
            index += 1
            continue
        closing = same.pop()
        spans.append((start, (stop, runs[closing][0]), runs[closing][1]))
        index = closing + 1
    return spans


def _refenced(block: list[str], closing: str) -> list[str]:
    """A fenced block whose fences are longer than any backtick run of its (filled) content."""
    opening = _FENCE.match(block[0])
    assert opening is not None
    fence = max(opening.group(2), fence_for(block[1:]), key=len)
    indent = opening.group(1)
    return [f"{indent}{fence}{opening.group(3)}", *block[1:], f"{indent}{fence}"]


def render_fix(entry: Entry, stacks: set[str], fields: Mapping[str, str]) -> str:
    parts = [fill(v.text, fields) for v in entry.fix_variants if variant_applies(v, stacks, fields)]
    parts.append(fill(entry.fix, fields))
    return "\n\n".join(p for p in parts if p)
