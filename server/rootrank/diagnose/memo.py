"""Answers remembered by text: the ranks of a big job print the same texts (traceback frames, launcher
reports, the same warning), so what a text says by itself is worked out once.

Bounded: at most `size` texts of at most `max_chars` characters (longer ones are rare and seldom
repeat), cleared when full, so memory stays a few MiB whatever the log.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class TextMemo(Generic[T]):
    def __init__(self, compute: Callable[[str], T], size: int = 1 << 14, max_chars: int = 1024) -> None:
        self._compute = compute
        self._size = size
        self._max_chars = max_chars
        self._known: dict[str, T] = {}

    def __call__(self, text: str) -> T:
        if len(text) > self._max_chars:
            return self._compute(text)
        if text in self._known:
            return self._known[text]
        if len(self._known) >= self._size:
            self._known.clear()
        answer = self._known[text] = self._compute(text)
        return answer

    def clear(self) -> None:
        self._known.clear()
