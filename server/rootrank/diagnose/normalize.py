"""Normalisation of raw log text: ANSI escapes, `\\r` progress bars, CRLF, and paste damage.

A physical line can hold several logical lines (a progress bar rewritten with `\\r`, or a second
process's prefix glued after a bar); each logical line keeps the physical line's number.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

# CSI and OSC escapes, plus the literal forms a copy from some terminals leaves behind ("^[[31m", "ESC[0m").
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]"
                   r"|(?:\^\[|ESC)\[[0-9;]*[mK]")
_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# A rank prefix starting in the middle of a line, glued after a progress bar or another process's text.
_GLUED_PREFIX = re.compile(r"(?<=[^\s\[])(?=\[(?:rank|default)\d{1,6}\]:|\[[\w.-]{1,64}:\d{1,5}\]:)")
# A log record glued after a tqdm bar's last state (`... 13.68s/it]W0629 00:06:21.246000 1402 torch/...`): the
# bar is drawn without a newline, and the next process's glog or time-stamped line goes on from its end.
_GLUED_AFTER_BAR = re.compile(r"(?<=it/s\]|s/it\])(?=[IWEF]\d{4} \d\d:\d\d:\d\d|\[?\d{4}-\d\d-\d\d[ T]\d\d:\d\d)")
MAX_LINE_CHARS = 64 * 1024
REGEXES = (_ANSI, _CONTROL, _GLUED_PREFIX, _GLUED_AFTER_BAR)  # what split_physical looks at, for shapes.digit_classes


def clean(text: str) -> str:
    """Remove escapes and control characters from one logical line."""
    if "\x1b" in text or "^[" in text or "ESC[" in text:
        text = _ANSI.sub("", text)
    if "\t" in text:
        text = text.replace("\t", "    ")
    if text.isascii() and text.isprintable():
        return text
    return _CONTROL.sub("", text) if _CONTROL.search(text) else text


def _may_hold_glued_prefix(part: str) -> bool:
    # Most lines hold a single "]:", closing a bracket opened at column 0 (their own rank prefix); a
    # glued prefix needs a "[" after column 0 that is the last "[" before some "]:".
    first = part.find("]:")
    return part.rfind("[", 0, first) > 0 or part.find("]:", first + 2) >= 0


def split_physical(line: str) -> list[str]:
    """Split one physical line (without its newline) into logical lines."""
    line = line.rstrip("\n")
    if line.endswith("\r"):
        line = line.rstrip("\r")
    if "^M" in line:
        line = line.replace("^M", "\r")
    if len(line) > MAX_LINE_CHARS:
        # A line this long is a progress bar or a binary blob; its head and tail carry any message.
        line = line[: MAX_LINE_CHARS // 2] + " ... " + line[-MAX_LINE_CHARS // 2:]
    parts = line.split("\r") if "\r" in line else [line]
    out: list[str] = []
    for part in parts:
        part = clean(part)
        if not part.strip():
            continue
        if "]:" in part and _may_hold_glued_prefix(part) and _GLUED_PREFIX.search(part):
            out.extend(p for p in _GLUED_PREFIX.split(part) if p.strip())
        elif ("s/it]" in part or "it/s]" in part) and _GLUED_AFTER_BAR.search(part):
            out.extend(p for p in _GLUED_AFTER_BAR.split(part) if p.strip())
        else:
            out.append(part)
    return out or [""]


def iter_logical(lines: Iterable[str]) -> Iterator[tuple[int, str]]:
    """(physical line number, logical line) for every logical line of the input."""
    return iter_logical_numbered(enumerate(lines, start=1))


def iter_logical_numbered(lines: Iterable[tuple[int, str]]) -> Iterator[tuple[int, str]]:
    """The same for lines that already carry their physical numbers (a selection of a big log)."""
    for number, line in lines:
        for part in split_physical(line):
            yield number, part
