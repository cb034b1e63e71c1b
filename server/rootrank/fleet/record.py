"""The record of one scanned run (`RunResult`) and its JSON form, schema `rootrank.scan/1` (docs/scan.md).

A row is built from a run's Diagnosis by the worker that read the run, so it holds only small, plain
values: the same row travels through a process pool, a Ray object store and the resume cache, and is
written as one JSONL line. The JSON form is the contract; `row_to_json` and `row_from_json` are inverse.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

SCHEMA = "rootrank.scan/1"

FAILED, WARNING, CLEAN, UNREADABLE = "failed", "warning", "clean", "unreadable"
HARDWARE_CATEGORIES = ("hardware", "infra")


@dataclass(frozen=True, slots=True)
class HostFinding:
    """A hardware- or infrastructure-class entry seen in a run, and the hosts whose ranks showed it."""

    rule: str
    hosts: tuple[str, ...]
    count: int


@dataclass(frozen=True, slots=True)
class RunResult:
    """One run of the fleet: its diagnosis in a line, or why it could not be read."""

    run: str  # the run's name: its folder or file name under the scanned root
    path: str  # absolute path of the folder or file
    status: str  # FAILED | WARNING | CLEAN | UNREADABLE
    rule: str | None = None  # the root cause's entry id
    title: str = ""
    rank: int | None = None  # the initiating rank
    host: str | None = None  # the initiating rank's host, when the log names it
    time: str | None = None  # ISO 8601 UTC: when the failure happened (or the run ended)
    time_from: str = ""  # "log" (a stamp of the failing line) or "mtime" (the newest file's mtime)
    decided_by: str = ""  # the signal that decided the initiating rank
    evidence: str = ""  # the first evidence line (redacted)
    evidence_source: str = ""
    evidence_line: int | None = None
    hosts: tuple[str, ...] = ()  # every host the logs show the run on
    hardware: tuple[HostFinding, ...] = ()
    files: int = 0
    bytes: int = 0
    error: str | None = None  # why an UNREADABLE run could not be read

    @property
    def failed(self) -> bool:
        return self.status == FAILED


def row_to_json(row: RunResult) -> dict[str, Any]:
    return {
        "schema": SCHEMA,
        "run": row.run,
        "path": row.path,
        "status": row.status,
        "rule": row.rule,
        "title": row.title,
        "rank": row.rank,
        "host": row.host,
        "time": row.time,
        "time_from": row.time_from,
        "decided_by": row.decided_by,
        "evidence": row.evidence,
        "evidence_source": row.evidence_source,
        "evidence_line": row.evidence_line,
        "hosts": list(row.hosts),
        "hardware": [{"rule": h.rule, "hosts": list(h.hosts), "count": h.count} for h in row.hardware],
        "files": row.files,
        "bytes": row.bytes,
        "error": row.error,
    }


def row_from_json(data: dict[str, Any]) -> RunResult:
    if data.get("schema") != SCHEMA:
        raise ValueError(f"not a {SCHEMA} row")
    return RunResult(
        run=str(data["run"]), path=str(data["path"]), status=str(data["status"]), rule=data.get("rule"),
        title=str(data.get("title", "")), rank=data.get("rank"), host=data.get("host"), time=data.get("time"),
        time_from=str(data.get("time_from", "")), decided_by=str(data.get("decided_by", "")),
        evidence=str(data.get("evidence", "")), evidence_source=str(data.get("evidence_source", "")),
        evidence_line=data.get("evidence_line"), hosts=tuple(data.get("hosts", ())),
        hardware=tuple(HostFinding(str(h["rule"]), tuple(h["hosts"]), int(h["count"]))
                       for h in data.get("hardware", ())),
        files=int(data.get("files", 0)), bytes=int(data.get("bytes", 0)), error=data.get("error"))
