"""Scanning runs as Ray tasks (the `rootrank[ray]` extra): one task per run, on whatever cluster the
user names, reading each run where it lies (a shared file system path the workers can see).

Only the run's path and file list go out to a task and only its row comes back, so no log content
leaves the user's own processes. A task whose worker dies is retried by Ray (MAX_RETRIES); a run
that still cannot be processed, for any reason, comes back as an unreadable row with Ray's reason.
The task runs the very same `work.scan_run` as the local pool, so rows are identical.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from rootrank.fleet.record import UNREADABLE, RunResult
from rootrank.fleet.runs import Run

MAX_RETRIES = 3
IN_FLIGHT = 256  # tasks submitted ahead: bounded, so a fleet of millions does not queue them all at once


def _scan_task(run: Run) -> RunResult:
    import os

    # Each worker already holds a core of its own: no second process per big file.
    os.environ["ROOTRANK_JOBS"] = "1"
    from rootrank.fleet.work import scan_run

    return scan_run(run)


def connect(address: str) -> Any:
    """Join the cluster at `address` ("auto", "ray://...") unless this process already did ("")."""
    import ray

    if not ray.is_initialized():
        ray.init(address=address or None, log_to_driver=False, include_dashboard=False)
    return ray


def scan_on_ray(runs: list[Run], address: str) -> Iterator[RunResult]:
    """Rows of `runs`, in the order they finish."""
    if not runs:
        return
    ray = connect(address)
    task = ray.remote(max_retries=MAX_RETRIES, num_cpus=1)(_scan_task)
    queue = iter(runs)
    flying: dict[Any, Run] = {}

    def top_up() -> None:
        while len(flying) < IN_FLIGHT:
            run = next(queue, None)
            if run is None:
                return
            flying[task.remote(run)] = run

    top_up()
    while flying:
        done, _ = ray.wait(list(flying), num_returns=1)
        for ref in done:
            run = flying.pop(ref)
            try:
                yield ray.get(ref)
            except Exception as exc:  # a task that failed every retry: the run is reported, not lost
                reason = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                yield RunResult(run.name, run.path, UNREADABLE, files=len(run.files), bytes=run.size,
                                error=f"the Ray task failed {MAX_RETRIES + 1} times: {type(exc).__name__}: "
                                      f"{reason[:200]}")
        top_up()
