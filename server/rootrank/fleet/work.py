"""The work of one run: read it with the diagnose pipeline and reduce the Diagnosis to a RunResult.

`scan_run` is what every executor runs (the local process pool, a Ray task), so a run's row does not
depend on where it was read. It never raises for a run's own problems: unreadable input, and any
failure of the pipeline on it, become an UNREADABLE row with the reason.
"""

from __future__ import annotations

import datetime as dt
import os
from collections.abc import Mapping
from dataclasses import replace

from rootrank.diagnose import InputError, Pipeline, diagnose_paths
from rootrank.fleet.record import (
    CLEAN,
    FAILED,
    HARDWARE_CATEGORIES,
    UNREADABLE,
    WARNING,
    HostFinding,
    RunResult,
)
from rootrank.fleet.runs import Run
from rootrank.library import Library, load_library
from rootrank.model import Diagnosis
from rootrank.redact import redact

MAX_EVIDENCE = 300  # characters of the evidence line a row keeps


def scan_run(run: Run, library: Library | None = None) -> RunResult:
    if run.problem is not None:
        return RunResult(run.name, run.path, UNREADABLE, error=run.problem)
    library = library or load_library()
    pipeline = Pipeline(library)
    try:
        diagnosis = diagnose_paths([run.path], pipeline=pipeline)
    except InputError as exc:
        return _unreadable(run, str(exc))
    except Exception as exc:  # a bug met on one run must not cost the rest of the fleet
        return _unreadable(run, f"internal error: {type(exc).__name__}: {exc}")
    return summarize(run, diagnosis, pipeline.collector.out.hosts, library)


def _unreadable(run: Run, message: str) -> RunResult:
    prefix = run.path + os.sep
    return RunResult(run.name, run.path, UNREADABLE, files=len(run.files), bytes=run.size,
                     error=message.replace(prefix, ""))


def summarize(run: Run, diagnosis: Diagnosis, hosts: Mapping[int, str], library: Library) -> RunResult:
    """The row of a diagnosed run; `hosts` maps ranks to the hosts the log names for them."""
    root = diagnosis.root_cause
    hardware = []
    for finding in diagnosis.findings:
        entry = library.entries.get(finding.rule)
        if entry is None or entry.category not in HARDWARE_CATEGORIES:
            continue
        named = {host for rank, host in hosts.items() if rank in finding.ranks or rank == finding.rank}
        if root is not None and root.rule == finding.rule and root.host:
            named.add(root.host)  # the root cause's line may name its host without its rank
        hardware.append(HostFinding(finding.rule, tuple(sorted(named)), finding.count))
    base = RunResult(run.name, run.path, CLEAN, files=len(run.files), bytes=run.size,
                     hosts=tuple(sorted(set(hosts.values()))), hardware=tuple(hardware))
    if root is None:
        when, source = _when(None, run)
        return replace(base, time=when, time_from=source)
    stamp = next((t.time for t in diagnosis.timeline
                  if t.rule == root.rule and t.line == root.line and t.time is not None), None)
    when, source = _when(stamp, run)
    first = root.evidence[0] if root.evidence else None
    host = root.host if root.host is not None else hosts.get(root.rank) if root.rank is not None else None
    return replace(
        base, status=FAILED if diagnosis.failed else WARNING, rule=root.rule, title=root.title,
        rank=root.rank, host=host, time=when, time_from=source, decided_by=root.decided_by,
        evidence=redact(first.text)[:MAX_EVIDENCE] if first else "",
        evidence_source=_relative(first.source, run.path) if first else "",
        evidence_line=first.line if first else None)


def _relative(source: str, run_path: str) -> str:
    absolute = os.path.abspath(source)
    return os.path.relpath(absolute, run_path) if absolute.startswith(run_path + os.sep) else os.path.basename(source)


def _when(stamp: float | None, run: Run) -> tuple[str | None, str]:
    """When it happened, as ISO UTC. Log stamps carry no year (formats/timestamps.py): the year is the
    one of the newest file's mtime, or the year before when that would put the stamp after the mtime."""
    newest = run.newest_mtime_ns
    if newest is None:
        return None, ""
    ended = dt.datetime.fromtimestamp(newest / 1e9, dt.timezone.utc)
    if stamp is not None:
        for year in (ended.year, ended.year - 1):
            at = dt.datetime(year, 1, 1, tzinfo=dt.timezone.utc) + dt.timedelta(seconds=stamp)
            if at <= ended + dt.timedelta(days=1):
                return _iso(at), "log"
    return _iso(ended), "mtime"


def _iso(at: dt.datetime) -> str:
    return at.replace(microsecond=0).strftime("%Y-%m-%dT%H:%M:%SZ")
