"""The small immutable records a watch produces: rank processes, their stacks, stall reports, status.

Front ends (the CLI's text, the editor's status file) convert these; nothing here prints.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Frame:
    """One Python frame as py-spy shows it."""

    function: str
    file: str
    line: int

    @property
    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass(frozen=True, slots=True)
class RankProcess:
    """A process of the job that is one rank (its RANK from its environment, or its place among the
    job's Python processes when no launcher set one)."""

    pid: int
    rank: int | None
    local_rank: int | None = None
    command: str = ""


@dataclass(frozen=True, slots=True)
class RankStack:
    """The main thread's stack of one rank, innermost frame first; `error` when it could not be taken."""

    process: RankProcess
    frames: tuple[Frame, ...] = ()
    error: str = ""
    collective: str = ""  # the torch.distributed call it waits in, "" when none
    user_frame: Frame | None = None  # its innermost frame in the job's own code

    @property
    def label(self) -> str:
        rank = self.process.rank
        return f"rank {rank}" if rank is not None else f"pid {self.process.pid}"


@dataclass(frozen=True, slots=True)
class StallReport:
    """A stall: why it was flagged, every rank's stack, and the odd one(s) out."""

    reason: str  # "no rank progressed for 62 s (usual interval 0.4 s)" or the watchdog line
    silent_for: float  # seconds since the last progress line
    stacks: tuple[RankStack, ...] = ()
    hung: tuple[RankStack, ...] = ()  # the ranks not in the collective the others wait in
    waiting: tuple[RankStack, ...] = ()  # the ranks that wait
    waiting_in: str = ""  # that collective, with the job's line that called it
    verdict: str = ""  # one sentence: who hangs where, or why it cannot be told
    stacks_path: str = ""
    problem: str = ""  # why no stacks were taken (py-spy missing, ptrace not permitted)


@dataclass(frozen=True, slots=True)
class WatchStatus:
    """What an editor shows while the job runs: "3 ranks, step 1200, ok" / "rank 1 stalled 95 s at train.py:88"."""

    state: str  # "running", "stalled", "failed", "done", "interrupted"
    ranks: int
    step: int | None
    text: str
    report: str = ""  # path of the report file, when one was written
    exit_code: int | None = None
