"""What the server remembers about each open document between requests."""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from lsprotocol import types

    from rootrank.diagnose.live import GrowingText
    from rootrank.model import Diagnosis, Finding


@dataclass
class DocumentState:
    """Per-document scheduling and the last published results (with the version they belong to)."""

    uri: str
    kind: str  # "code" (Python or a training config), "log", or "" (not ours)
    published_version: int | None = None
    diagnostics: list[types.Diagnostic] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)
    diagnosis: Diagnosis | None = None
    # (version, the diagnostics published for it, their proven fix-all edits)
    fix_all: tuple[int | None, list[types.Diagnostic], list[types.TextEdit]] | None = None
    growing: GrowingText | None = None  # a log document: its live diagnosis, for versions that only append
    # scheduling: one run at a time per document; edits during a run make it stale and schedule another
    timer: asyncio.TimerHandle | None = None
    task: asyncio.Task[None] | None = None
    last_change: float = 0.0
    generation: int = 0  # bumped on every change/close: a result from an older generation is dropped

    def cancel(self) -> None:
        """Forget scheduled and running work (the running thread finishes, its result is dropped)."""
        self.generation += 1
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        if self.task is not None and not self.task.done():
            self.task.cancel()
        self.task = None
