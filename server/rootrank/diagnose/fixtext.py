"""Filling an entry's fix with what the log showed: the variants for the user's stack, captured numbers.

A sentence or list item whose `{placeholder}` has no value in this log is left out rather than shown
with a hole, so entries can say "the step asked for {requested}" without a fallback for every field.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from rootrank.library import Entry, FixVariant

_PLACEHOLDER = re.compile(r"\{([a-z_][a-z0-9_]*)\}")
_UNIT_START = re.compile(r"^\s*(?:[-*+]\s|\d+[.)]\s|#|```|\||>)")


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
        out.append(_PLACEHOLDER.sub(lambda m: fields[m.group(1)], joined))
    return re.sub(r"\n{3,}", "\n\n", "\n".join(out)).strip()


def render_fix(entry: Entry, stacks: set[str], fields: Mapping[str, str]) -> str:
    parts = [fill(v.text, fields) for v in entry.fix_variants if variant_applies(v, stacks, fields)]
    parts.append(fill(entry.fix, fields))
    return "\n\n".join(p for p in parts if p)
