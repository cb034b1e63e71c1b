"""From raw text lines to `LogLine`s: normalise, peel prefixes, find rank/host/time, group tracebacks.

This is the per-line part of the pipeline, streaming: it holds only a small look-ahead buffer per
source (to learn the source's prefix dialect) and a little state per printing process.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from rootrank.diagnose.formats.inline import rank_in_message
from rootrank.diagnose.formats.paths import ranks_from_path
from rootrank.diagnose.formats.prefixes import Dialect, peel
from rootrank.diagnose.formats.timestamps import find_time
from rootrank.diagnose.launcher import ARMING_SIGNS, LauncherParser, agent_of
from rootrank.diagnose.memo import TextMemo
from rootrank.diagnose.normalize import iter_logical_numbered
from rootrank.diagnose.tracebacks import TracebackGrouper
from rootrank.model import LogLine


def _facts(text: str) -> tuple[int | None, float | None]:
    """What a text says by itself: a rank it names, a time stamp near its start."""
    return rank_in_message(text), find_time(text)


class LineScanner:
    """Turns the lines of one or more sources into LogLines; shares launcher and traceback state."""

    def __init__(self) -> None:
        self.launcher = LauncherParser()
        self.tracebacks = TracebackGrouper()
        self.follow_until = 0  # line number up to which a multi-line message's continuation may come
        self._last_number = 0
        self._text_facts = TextMemo(_facts)
        self._sampling = False  # lines are being read ahead to learn the dialect, before anything sees them

    @property
    def wants_every_line(self) -> bool:
        # While lines are read ahead, the launcher parser has not seen them and cannot ask for the lines of
        # a table that starts among them: once a line that arms it is read ahead, every line is taken, so that the result does not depend on how
        # much output came before the table.
        return (self._sampling or self.launcher.wants_every_line or self.tracebacks.inside_traceback
                or self._last_number < self.follow_until)

    def scan(self, source: str, lines: Iterable[tuple[int, str]], path_hint: str | None = None) -> Iterator[LogLine]:
        """LogLines for (physical number, raw line) pairs, which may be a selection of the source's lines."""
        path_rank, path_local, path_host = ranks_from_path(path_hint) if path_hint else (None, None, None)
        logical = iter_logical_numbered(lines)
        dialect_probe = Dialect()
        buffered: list[tuple[int, str]] = []
        try:
            for item in logical:
                buffered.append(item)
                dialect_probe.observe(item[1])
                if not self._sampling and any(sign in item[1] for sign in ARMING_SIGNS):
                    self._sampling = True  # the launcher will arm on this line: its table follows
                if len(buffered) >= Dialect.SAMPLE:
                    break
        finally:
            self._sampling = False
        dialect = dialect_probe.decide()

        def all_items() -> Iterator[tuple[int, str]]:
            yield from buffered
            yield from logical

        text_facts = self._text_facts
        for number, raw in all_items():
            self._last_number = number
            peeled = peel(raw, dialect)
            text = peeled.text
            rank = peeled.rank if peeled.rank is not None else path_rank
            local_rank = peeled.local_rank if peeled.local_rank is not None else path_local
            host = peeled.host or path_host
            stream_rank = rank
            facts = text_facts(text)
            if rank is None:
                rank = facts[0]
            time = peeled.time if peeled.time is not None else facts[1]
            quoted, table_rank = self.launcher.feed(text, number, source, agent_of(peeled.host, peeled.pid))
            if quoted:
                rank = table_rank
                stream: object = ("launcher-table", source)
            else:
                # The stream is the printing process as its prefix tells; a rank named in the message
                # must not split an unprefixed traceback from its own exception line.
                stream = (source, stream_rank, local_rank, host)
            block = self.tracebacks.assign(stream, text, number)
            yield LogLine(number=number, text=text, raw=raw, source=source, rank=rank, local_rank=local_rank,
                          host=host, time=time, pid=peeled.pid, block=block, quoted=quoted)
