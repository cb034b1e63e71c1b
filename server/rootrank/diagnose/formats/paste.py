"""What pasting does to a log line: Markdown and chat decorations, test-runner and logger prefixes.

People bring messages from issue threads, chats and CI pages: `> ` quotes, `**emphasis**` or
backticks around the message, list bullets, pytest's `E   ` failure lines, the `ERROR:root:` of
`logging`'s default format, Windows paths in frames. `undecorate` gives the message underneath; the
pipeline tries it when the line as printed matches nothing, so a decorated line matches the same
entry as the plain one and a plain line is never changed.
"""

from __future__ import annotations

import re

_LEAD = re.compile(
    r"^(?:\s{0,8}(?:>\s?)+"  # Markdown / e-mail quotes, nested
    r"|\s{0,8}[-*+\u2022]\s+(?=\S)"  # list bullets
    r"|E {3,}(?=\S)"  # pytest's failure lines
    r"|(?:DEBUG|INFO|WARNING|ERROR|CRITICAL):[\w.<>-]{0,200}:(?=\S)"  # logging.basicConfig's default format
    r")+")
_EMPHASIS = re.compile(r"^(?P<mark>\*\*\*|\*\*|__|`{1,3}|\*|_)(?P<body>\S.*?\S|\S)(?P=mark)\s*$")
_OPEN_EMPHASIS = re.compile(r"^(?:\*\*\*|\*\*|__|`{1,3})(?=\S)")
_WINDOWS_FRAME = re.compile(r'File "(?P<path>[A-Za-z]:\\[^"]{1,1000})"')
_MARKS = r"\*\*\*|\*\*|__|`{1,3}|\*|_"
# What undecorate looks at, for shapes.digit_classes. _EMPHASIS's backreference compares marks, which
# hold no digit: as far as digits go it reads like the marks' own alternation.
REGEXES = (_LEAD.pattern, _EMPHASIS.pattern.replace("(?P=mark)", f"(?:{_MARKS})"), _OPEN_EMPHASIS.pattern,
           _WINDOWS_FRAME.pattern)
_MARK_CHARS = frozenset(">-*+\u2022E_`DIWC\t ")


def undecorate(text: str) -> str:
    """The message under a paste's decorations; `text` itself (the same object) when there are none."""
    out = text
    if out[:1] in _MARK_CHARS:
        m = _LEAD.match(out)
        if m and m.end() > 0:
            out = out[m.end():]
    if out[:1] in "*_`":
        m = _EMPHASIS.match(out)
        if m:
            out = m["body"]
        else:
            # Emphasis cut off with the rest of the line: only its opening mark is left.
            m2 = _OPEN_EMPHASIS.match(out)
            if m2:
                out = out[m2.end():]
    if 'File "' in out and ":\\" in out:
        out = _WINDOWS_FRAME.sub(lambda m: 'File "' + m["path"].replace("\\", "/") + '"', out)
    return text if out == text else out
