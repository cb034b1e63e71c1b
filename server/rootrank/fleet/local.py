"""Scanning runs on this machine's cores: a pool of processes, one run per task (standard library only).

A worker that dies (killed for memory, a crash in an extension) breaks the whole pool in
concurrent.futures: the runs still pending are then given to a fresh pool, and a run that was in
flight every time a pool broke (MAX_TRIES) is reported as unreadable with that reason, never lost.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING

from rootrank.fleet.record import UNREADABLE, RunResult
from rootrank.fleet.runs import Run

if TYPE_CHECKING:
    from concurrent.futures import Future, ProcessPoolExecutor

MAX_TRIES = 3


def _init_worker() -> None:
    # Every core already reads its own run: no second process per big file (diagnose/parallel.py).
    os.environ["ROOTRANK_JOBS"] = "1"


def _scan(run: Run) -> RunResult:
    from rootrank.fleet.work import scan_run

    return scan_run(run)


def scan_local(runs: list[Run], jobs: int | None = None) -> Iterator[RunResult]:
    """Rows of `runs`, in the order they finish."""
    jobs = max(1, min(jobs or os.cpu_count() or 1, len(runs)))
    if jobs == 1:
        from rootrank.fleet.work import scan_run

        yield from (scan_run(run) for run in runs)
        return
    yield from _pooled(runs, jobs)


def _pooled(runs: list[Run], jobs: int) -> Iterator[RunResult]:
    import multiprocessing
    from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
    from concurrent.futures.process import BrokenProcessPool

    # fork shares the loaded library with the workers; a process running other threads must not fork.
    method = "fork" if "fork" in multiprocessing.get_all_start_methods() and threading.active_count() == 1 \
        else "spawn"
    tries = dict.fromkeys(range(len(runs)), 0)
    pending = list(range(len(runs)))
    while pending:
        broke = False
        with ProcessPoolExecutor(jobs, mp_context=multiprocessing.get_context(method),
                                 initializer=_init_worker) as pool:
            futures: dict[Future[RunResult], int] = {}
            queue = iter(pending)
            pending = []
            _submit(pool, futures, queue, runs, jobs * 2, tries)
            while futures:
                done, _ = wait(futures, return_when=FIRST_COMPLETED)
                for future in done:
                    index = futures.pop(future)
                    try:
                        yield future.result()
                    except BrokenProcessPool:
                        broke = True
                        pending.append(index)
                if broke:
                    pending.extend(futures.values())
                    pending.extend(queue)
                    for future in futures:
                        future.cancel()
                    break
                _submit(pool, futures, queue, runs, len(done), tries)
        if broke:
            lost = [i for i in pending if tries[i] >= MAX_TRIES]
            for index in lost:
                run = runs[index]
                yield RunResult(run.name, run.path, UNREADABLE, files=len(run.files), bytes=run.size,
                                error=f"the process reading it died {MAX_TRIES} times")
            pending = sorted(i for i in pending if tries[i] < MAX_TRIES)


def _submit(pool: ProcessPoolExecutor, futures: dict[Future[RunResult], int], queue: Iterator[int],
            runs: list[Run], count: int, tries: dict[int, int]) -> None:
    # A bounded window of tasks: a broken pool then only re-queues what was in flight.
    for _ in range(count):
        index = next(queue, None)
        if index is None:
            return
        tries[index] += 1
        futures[pool.submit(_scan, runs[index])] = index
