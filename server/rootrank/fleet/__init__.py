"""`rootrank scan`: the runs of a fleet, one row each, and the views across them (fleet/views.py).

runs.py finds the runs under a root and fingerprints their files; cache.py skips the runs already
scanned; the rest are read where they lie by work.scan_run, on this machine's cores (local.py) or as
Ray tasks (onray.py, the `rootrank[ray]` extra); record.py is the row and its JSONL form; views.py
the fleet views; text.py, jsonl.py and html.py the output formats. The rows come back sorted by run
name, so a scan gives the same output on every executor.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from rootrank.fleet.cache import ScanCache
from rootrank.fleet.record import RunResult
from rootrank.fleet.runs import Run, discover

__all__ = ["Scan", "scan"]

SAVE_EVERY = 50  # rows between saves of the cache: an interrupted scan resumes from there


@dataclass(frozen=True)
class Scan:
    root: str
    rows: tuple[RunResult, ...]  # sorted by run name
    from_cache: int  # rows taken from the cache (not read again)


def scan(root: str, ray: str | None = None, jobs: int | None = None, cache: Path | None = None,
         on_progress: Callable[[int, int], None] | None = None) -> Scan:
    """Scan every run under `root`. `ray`: a Ray address ("auto", "ray://host:10001", ...), or "" for
    the cluster this process already joined; None reads on this machine. `cache`: the resume cache's
    file, None for none. Raises rootrank.diagnose.InputError when `root` itself is unusable."""
    runs = discover(root)
    store = ScanCache(cache)
    rows: dict[str, RunResult] = {}
    todo: list[Run] = []
    for run in runs:
        cached = store.get(run)
        if cached is None:
            todo.append(run)
        else:
            rows[run.path] = cached
    from_cache = len(rows)
    if on_progress is not None:
        on_progress(len(rows), len(runs))
    by_path = {run.path: run for run in todo}
    if ray is None:
        from rootrank.fleet.local import scan_local

        results = scan_local(todo, jobs)
    else:
        from rootrank.fleet.onray import scan_on_ray

        results = scan_on_ray(todo, ray)
    try:
        for row in results:
            rows[row.path] = row
            store.put(by_path[row.path], row)
            if on_progress is not None:
                on_progress(len(rows), len(runs))
            if (len(rows) - from_cache) % SAVE_EVERY == 0:
                store.save()
    finally:
        store.save()
    return Scan(root, tuple(sorted(rows.values(), key=lambda r: (r.run, r.path))), from_cache)
