"""The log side of rootrank: read -> normalize -> prefixes/ranks -> tracebacks -> match -> initiator -> report.

`diagnose_text` and `diagnose_paths` run the whole pipeline; each step lives in its own module:
read.py (bytes to lines), normalize.py (escapes, progress bars), formats/ (prefixes, timestamps, per-rank
file names), tracebacks.py (multi-line grouping), launcher.py (torchrun/DeepSpeed/srun accounts),
match.py (library patterns), collect.py (bounded evidence), initiator.py (who started it),
report.py (the Diagnosis).
"""

from __future__ import annotations

from collections.abc import Iterable

from rootrank.diagnose.collect import EventCollector
from rootrank.diagnose.lines import LineScanner
from rootrank.diagnose.match import Matcher
from rootrank.diagnose.read import InputError, Source, expand_paths, iter_lines
from rootrank.diagnose.report import build_diagnosis
from rootrank.library import Library, load_library
from rootrank.model import Diagnosis

__all__ = ["InputError", "Pipeline", "diagnose_paths", "diagnose_text"]


class Pipeline:
    """One diagnosis: feed it sources, then ask for the result. Reads each line once."""

    def __init__(self, library: Library | None = None) -> None:
        self.library = library or load_library()
        self.scanner = LineScanner()
        self.matcher = Matcher(self.library)
        self.collector = EventCollector(self.library)

    def feed(self, source: str, lines: Iterable[str], path_hint: str | None = None) -> None:
        entries = self.library.entries
        collector = self.collector
        match = self.matcher.match
        self.collector.out.sources.append(source)
        for line in self.scanner.scan(source, lines, path_hint):
            order = collector.observe(line)
            for pattern, m in match(line.text):
                fields = {k: v for k, v in m.groupdict().items() if v is not None}
                collector.add(line, order, entries[pattern.entry_id], fields, pattern.name)

    def result(self) -> Diagnosis:
        return build_diagnosis(self.collector.out, self.scanner.launcher.report, self.library)


def diagnose_text(text: str, source: str = "-", library: Library | None = None) -> Diagnosis:
    """Diagnose a pasted selection, a traceback or a whole log held in memory."""
    pipeline = Pipeline(library)
    pipeline.feed(source, text.split("\n"))
    return pipeline.result()


def diagnose_paths(paths: list[str], library: Library | None = None) -> Diagnosis:
    """Diagnose files (several per-rank files of one run count as one run) or "-" for stdin."""
    sources: list[Source] = expand_paths(paths or ["-"])
    pipeline = Pipeline(library)
    for source in sources:
        pipeline.feed(source.name, iter_lines(source), path_hint=source.name)
    return pipeline.result()
