"""One huge run on a Ray cluster: `rootrank diagnose PATH... --ray ADDRESS`.

The driver runs the diagnose pipeline as always; what it hands to the cluster is the candidate
search of each big file past its first chunk, cut into byte ranges, one Ray task per range, for
every file of the run at once (per-rank files included) as soon as the prefilter is known. Each
task finds, in the lines starting in its range, the candidate lines (their offsets and their index
among the range's lines) and counts the range's lines: the per-part summaries of the local parallel
path (diagnose/parallel.py), which the driver reduces the same way through select.py's Split seam,
reading only the candidate lines (and the ones the pipeline asks for) at their offsets. The tasks
rebuild the driver's prefilter from the same literals and the same sample, so they select the same
lines, and the diagnosis is the local one, bit for bit. Files smaller than one chunk are read by the
driver: it reads every file's first chunk itself. A range whose task fails every retry is read by
the driver (select.py falls back when a Split's summary fails), so a lost worker costs only time.
"""

from __future__ import annotations

import contextlib
import os
from array import array
from collections.abc import Callable, Iterator
from typing import Any

from rootrank.diagnose import Pipeline, diagnose_paths, prefilter_literals
from rootrank.diagnose.parts import MAX_LINE_BYTES, PartSummary
from rootrank.diagnose.prefilter import Prefilter
from rootrank.diagnose.read import LineChunks, expand_paths
from rootrank.diagnose.select import CHUNK_BYTES
from rootrank.library import Library, load_library
from rootrank.model import Diagnosis

SEGMENT_BYTES = 64 << 20  # bytes of a file per task
MIN_REST_BYTES = 1 << 20  # a file's rest below this is read by the driver: a task costs more
READ_BYTES = 8 << 20
MAX_RETRIES = 3

_PREFILTERS: dict[int, Prefilter] = {}  # per worker process: rebuilt once per sample


def line_start_at_or_after(fd: int, offset: int, size: int) -> int:
    """The first line start at or after `offset` (size when there is none)."""
    if offset <= 0:
        return 0
    position = offset - 1
    while position < size:
        block = os.pread(fd, 1 << 16, position)
        if not block:
            break
        newline = block.find(b"\n")
        if newline >= 0:
            return min(position + newline + 1, size)
        position += len(block)
    return size


def _scan_range(path: str, nominal_start: int, nominal_end: int, size: int, sample: bytes,
                literals: tuple[tuple[str, ...], tuple[str, ...]]) -> tuple[bytes, int, bool, bool]:
    """A task: (candidate records as int64 pairs (offset, line index), newlines, ends with a newline,
    empty) for the lines starting in [nominal_start, nominal_end)."""
    key = hash((sample, literals))
    prefilter = _PREFILTERS.get(key)
    if prefilter is None:
        prefilter = _PREFILTERS[key] = Prefilter(literals[0], literals[1], sample)
    with open(path, "rb") as handle:
        fd = handle.fileno()
        start = line_start_at_or_after(fd, nominal_start, size)
        end = line_start_at_or_after(fd, nominal_end, size) if nominal_end < size else size
        if start >= end:
            return b"", 0, True, True
        records = array("q")
        lines = 0
        offset = start
        last = b"\n"
        handle.seek(start)
        for buf, cut in LineChunks(handle, READ_BYTES, MAX_LINE_BYTES, limit=end - start):
            previous = 0
            for line_start in prefilter.candidates(buf, 0, cut):
                lines += buf.count(b"\n", previous, line_start)
                previous = line_start
                records.append(offset + line_start)
                records.append(lines)
            lines += buf.count(b"\n", previous, cut)
            last = bytes(buf[cut - 1: cut])
            offset += cut
    return records.tobytes(), lines, last == b"\n", False


class RaySplit:
    """The rest of one file, [boundary, size), searched by Ray tasks (select.Split)."""

    def __init__(self, ray: Any, size: int, boundary: int, refs: list[Any]) -> None:
        self._ray = ray
        self.size = size
        self.boundary = boundary
        self._refs = refs
        self._parts: list[tuple[bytes, int, bool, bool]] = []

    @property
    def first_limit(self) -> int:
        return self.boundary

    def claim(self) -> int | None:
        return None  # the driver's part ends at the boundary

    def summary(self) -> PartSummary:
        self._parts = self._ray.get(self._refs)
        ends = [p[2] for p in self._parts if not p[3]]
        return PartSummary(newlines=sum(p[1] for p in self._parts), ends_with_newline=ends[-1] if ends else True)

    def candidates(self) -> Iterator[tuple[int, int]]:
        before = 0
        for records, newlines, _ends, _empty in self._parts:
            values = array("q")
            values.frombytes(records)
            for i in range(0, len(values), 2):
                yield values[i], before + values[i + 1]
            before += newlines

    def close(self) -> None:
        _cancel(self._ray, self._refs)


class RaySplitter:
    """Submits the range tasks of every big file of a run once the prefilter is known."""

    def __init__(self, ray: Any, files: list[tuple[str, int]], library: Library,
                 segment_bytes: int = SEGMENT_BYTES) -> None:
        self._ray = ray
        self._files = files
        self._segment = segment_bytes
        # The same lists Pipeline.prefilter builds its Prefilter from.
        self._literals = prefilter_literals(library)
        self._task = ray.remote(max_retries=MAX_RETRIES, num_cpus=1)(_scan_range)
        self._sample_ref: Any = None
        self._submitted: dict[tuple[str, int], list[Any]] = {}
        self.tasks = 0

    def cancel_rest(self) -> None:
        """Cancel the tasks of files the run did not reach (it stopped early, on an error)."""
        for refs in self._submitted.values():
            _cancel(self._ray, refs)
        self._submitted.clear()

    def remember_sample(self, sample: bytes) -> None:
        if self._sample_ref is None:
            self._sample_ref = self._ray.put(sample)

    def _submit(self, path: str, size: int, boundary: int) -> list[Any]:
        refs = [self._task.remote(path, start, min(start + self._segment, size), size, self._sample_ref,
                                  self._literals)
                for start in range(boundary, size, self._segment)]
        self.tasks += len(refs)
        return refs

    def __call__(self, path: str, size: int, prefilter: Prefilter, already_read: int) -> RaySplit | None:
        if size - already_read < MIN_REST_BYTES or self._sample_ref is None:
            return None
        if not self._submitted:
            # Every big file's rest at once: the cluster works on all of them while this process goes
            # through the files in order. A file's first chunk is CHUNK_BYTES (select.py).
            for other, other_size in self._files:
                if other_size - CHUNK_BYTES >= MIN_REST_BYTES:
                    with open(other, "rb") as handle:
                        start = line_start_at_or_after(handle.fileno(), CHUNK_BYTES, other_size)
                    self._submitted[(other, start)] = self._submit(other, other_size, start)
        with open(path, "rb") as handle:
            boundary = line_start_at_or_after(handle.fileno(), already_read, size)
        refs = self._submitted.pop((path, boundary), None)
        if refs is None:
            refs = self._submit(path, size, boundary)
        return RaySplit(self._ray, size, boundary, refs)


class _SampledPipeline(Pipeline):
    """A Pipeline that hands the prefilter's sample to the splitter (the tasks rebuild the same one)."""

    def __init__(self, library: Library, on_sample: Callable[[bytes], None]) -> None:
        super().__init__(library)
        self._on_sample = on_sample

    def prefilter(self, sample: bytes) -> Prefilter:
        if self._prefilter is None:
            self._on_sample(sample)
        return super().prefilter(sample)


def diagnose_on_ray(paths: list[str], address: str, on_progress: Callable[[int, int], None] | None = None,
                    segment_bytes: int = SEGMENT_BYTES) -> tuple[Diagnosis, int]:
    """The diagnosis of one run whose big files are searched by Ray tasks; and how many tasks ran."""
    from rootrank.fleet.onray import connect

    ray = connect(address)
    library = load_library()
    files = []
    for source in expand_paths(paths):
        if source.path is not None:
            try:
                files.append((str(source.path), os.path.getsize(source.path)))
            except OSError:
                continue  # diagnose_paths reports it
    splitter = RaySplitter(ray, files, library, segment_bytes)
    pipeline = _SampledPipeline(library, splitter.remember_sample)
    pipeline.splitter = splitter
    try:
        return diagnose_paths(paths, on_progress=on_progress, pipeline=pipeline), splitter.tasks
    finally:
        splitter.cancel_rest()


def _cancel(ray: Any, refs: list[Any]) -> None:
    for ref in refs:
        with contextlib.suppress(Exception):  # finished, or gone with its worker: nothing to cancel
            ray.cancel(ref)
