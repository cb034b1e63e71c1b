"""Timestamps found in training logs, mapped onto one comparable clock: seconds since the start of the year.

glog stamps (`W1129 23:25:33.851000`) carry no year, so every format drops its year and all stamps of
one log become comparable (a run that spans New Year is out of luck). Times from different hosts are
only as comparable as their clocks.
"""

from __future__ import annotations

import re

_DAYS_BEFORE_MONTH = (0, 0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334)

_GLOG = re.compile(r"[IWEF](\d{1,2})(\d\d)\s(\d\d):(\d\d):(\d\d(?:\.\d+)?)")
_ISO = re.compile(r"\d{4}-(\d\d)-(\d\d)[T _](\d\d):(\d\d)(?::(\d\d(?:[.,]\d+)?))?")
# syslog / journalctl / moreutils `ts` default: "Dec  3 16:40:12" (optionally with fractions of a second).
_SYSLOG = re.compile(r"(Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Oct|Nov|Dec)\s{1,2}(\d{1,2})\s(\d\d):(\d\d):(\d\d(?:\.\d+)?)")
_MONTHS = {name: i for i, name in enumerate(("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct",
                                               "Nov", "Dec"), start=1)}
# Stamps that can appear anywhere near the start of a message (Python logging, DeepSpeed, HF, elastic table).
_ANYWHERE = re.compile(r"(?<!\d)\d{4}-\d\d-\d\d[T _]\d\d:\d\d(?::\d\d(?:[.,]\d+)?)?|\b[IWEF]\d{3,4}\s\d\d:\d\d:\d\d\.\d+")


def _seconds(month: int, day: int, hour: int, minute: int, second: float) -> float | None:
    if not (1 <= month <= 12 and 1 <= day <= 31 and hour < 24 and minute < 60 and second < 61):
        return None
    return (_DAYS_BEFORE_MONTH[month] + day - 1) * 86400.0 + hour * 3600 + minute * 60 + second


def parse_time(stamp: str) -> float | None:
    """Seconds since the start of the (unknown) year for one stamp, or None when it is not a stamp."""
    m = _GLOG.match(stamp)
    if m:
        return _seconds(int(m[1]), int(m[2]), int(m[3]), int(m[4]), float(m[5]))
    m = _ISO.match(stamp)
    if m:
        second = float(m[5].replace(",", ".")) if m[5] else 0.0
        return _seconds(int(m[1]), int(m[2]), int(m[3]), int(m[4]), second)
    m = _SYSLOG.match(stamp)
    if m:
        return _seconds(_MONTHS[m[1]], int(m[2]), int(m[3]), int(m[4]), float(m[5]))
    return None


TIME_WINDOW = 80
REGEXES = (_ANYWHERE.pattern,)  # what time_span looks at, for shapes.digit_classes


def find_time(text: str, window: int = TIME_WINDOW) -> float | None:
    """A stamp within the first `window` characters of a message, if any."""
    span = time_span(text, window)
    return None if span is None else parse_time(text[span[0]: span[1]])


def time_span(text: str, window: int = TIME_WINDOW) -> tuple[int, int] | None:
    """Where the stamp within the first `window` characters of a message is, if any."""
    m = _ANYWHERE.search(text, 0, window)
    return m.span() if m else None
