"""Small immutable records shared by every part of rootrank: log lines, events, diagnoses, code findings.

Nothing here knows about a front end (CLI, language server); adapters convert these records.
Positions: lines are 1-based; columns are 1-based counts of characters (code points); an end
position is exclusive.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import MISSING, dataclass, field, fields
from typing import Any, TypeVar

from rootrank.ranks import RankSet


class Severity(str, enum.Enum):
    ERROR = "error"
    WARNING = "warning"
    INFO = "info"


class Role(str, enum.Enum):
    """What a failure entry means for the run: it can start a failure, be suffered, or describe the launcher."""

    CAUSE = "cause"
    SYMPTOM = "symptom"
    CONTEXT = "context"


class Applicability(str, enum.Enum):
    """How far a fix can be trusted, as in ruff: only SAFE fixes are applied by fix-all."""

    SAFE = "safe"
    UNSAFE = "unsafe"
    DISPLAY_ONLY = "display-only"


# --------------------------------------------------------------------------- log side

_Record = TypeVar("_Record")


def _quick_init(cls: type[_Record]) -> type[_Record]:
    """Give a frozen, slotted dataclass an `__init__` that stores each field through its slot's own
    setter: the generated one calls `object.__setattr__` by name per field, twice the time, and a
    failure cascade builds a line record and an event for each of tens of thousands of lines. The
    signature, the defaults and the immutability afterwards are the dataclass's own."""
    namespace: dict[str, Any] = {"_MISSING": MISSING}
    params: list[str] = []
    body: list[str] = []
    for spec in fields(cls):  # type: ignore[arg-type]
        name = spec.name
        namespace[f"_set_{name}"] = getattr(cls, name).__set__
        if spec.default is not MISSING:
            namespace[f"_default_{name}"] = spec.default
            params.append(f"{name}=_default_{name}")
        elif spec.default_factory is not MISSING:
            namespace[f"_factory_{name}"] = spec.default_factory
            params.append(f"{name}=_MISSING")
            body.append(f"    if {name} is _MISSING:\n        {name} = _factory_{name}()\n")
        else:
            params.append(name)
        body.append(f"    _set_{name}(self, {name})\n")
    exec(f"def __init__(self, {', '.join(params)}) -> None:\n{''.join(body)}", namespace)
    init = namespace["__init__"]
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    setattr(cls, "__init__", init)  # noqa: B010
    return cls


@_quick_init
@dataclass(frozen=True, slots=True)
class LogLine:
    """One logical line of a log after normalisation, with what the launcher prefix told us."""

    number: int  # 1-based line number in its source
    text: str  # the message with launcher prefixes removed
    raw: str  # the line as read (after decoding), for evidence
    source: str = "-"  # file path, or "-" for stdin / pasted text
    rank: int | None = None
    local_rank: int | None = None
    host: str | None = None
    time: float | None = None  # seconds; comparable only within one log (glog stamps have no year)
    pid: int | None = None
    block: int = 0  # lines of one traceback (or one launcher summary) share a block id; 0 = none
    quoted: bool = False  # echoed by a launcher summary about another process, not printed by it


@_quick_init
@dataclass(frozen=True, slots=True)
class Event:
    """A log line (or traceback) that matched a failure entry."""

    rule: str
    role: Role
    severity: Severity
    line: LogLine
    fields: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    pattern: str = ""  # the pattern name that matched
    traceback: tuple[LogLine, ...] = ()  # the traceback this event closes, when it does
    order: int = 0  # position in the merged stream (order of appearance)

    @property
    def rank(self) -> int | None:
        return self.line.rank


@dataclass(frozen=True, slots=True)
class Evidence:
    line: int
    rank: int | None
    text: str
    source: str = "-"


@dataclass(frozen=True, slots=True)
class Sureness:
    """How sure one part of a diagnosis is: `high` (right about 97 % of the time or better), `medium`,
    `low` (double-check it), with the reason in words."""

    level: str
    reason: str


@dataclass(frozen=True, slots=True)
class Confidence:
    failure: Sureness
    rank: Sureness


@dataclass(frozen=True, slots=True)
class Hypothesis:
    """One reading of a log the evidence does not decide, with what speaks for and against it."""

    rank: int | None
    rule: str
    evidence_for: str
    evidence_against: str


@dataclass(frozen=True, slots=True)
class RootCause:
    rule: str
    title: str
    severity: Severity
    rank: int | None
    host: str | None
    line: int
    evidence: tuple[Evidence, ...]
    why: str
    fix: str
    verify: str
    references: tuple[str, ...]
    source: str = "-"
    fields: dict[str, str] = field(default_factory=dict, hash=False, compare=False)
    decided_by: str = ""  # the signal that decided the initiating rank
    confidence: Confidence | None = None


@dataclass(frozen=True, slots=True)
class Candidate:
    rank: int
    rule: str
    why: str


@dataclass(frozen=True, slots=True)
class Collateral:
    rank: int
    rule: str
    line: int
    title: str = ""


@dataclass(frozen=True, slots=True)
class CollateralRanges:
    """Every collateral rank that suffered one entry, compact: `ranks` as people write them (0-2,4-7)."""

    rule: str
    title: str
    ranks: str
    count: int
    line: int  # the first line that showed it


@dataclass(frozen=True, slots=True)
class FindingSummary:
    """One entry seen in the log, aggregated over its occurrences."""

    rule: str
    title: str
    severity: Severity
    role: Role
    rank: int | None  # the first rank that showed it
    line: int  # the first line that showed it
    count: int
    ranks: RankSet = field(default_factory=lambda: RankSet().freeze())  # the ranks that printed it (frozen)


@dataclass(frozen=True, slots=True)
class TimelineItem:
    """One point of the per-rank timeline: what happened to a rank, and when (or in which order)."""

    rank: int | None
    rule: str
    role: Role
    line: int
    order: int
    time: float | None
    text: str


@dataclass(frozen=True, slots=True)
class Diagnosis:
    root_cause: RootCause | None
    candidates: tuple[Candidate, ...]
    collateral: tuple[Collateral, ...]
    findings: tuple[FindingSummary, ...]
    ranks_seen: RankSet  # frozen; a million ranks cost bits (rootrank.ranks)
    timeline: tuple[TimelineItem, ...] = ()
    lines_read: int = 0
    sources: tuple[str, ...] = ()
    undecided: str = ""  # when the evidence does not decide the rank, why
    hypotheses: tuple[Hypothesis, ...] = ()  # when it does not decide: the readings it leaves open
    tell_apart: str = ""  # one read-only command that decides between the hypotheses
    # `collateral` lists the first ranks (at most diagnose/report.MAX_COLLATERAL_LISTED, lowest first);
    # these cover all of them, grouped by entry, and `collateral_count` says how many there are.
    collateral_ranges: tuple[CollateralRanges, ...] = ()
    collateral_count: int = 0

    @property
    def failed(self) -> bool:
        return self.root_cause is not None and self.root_cause.severity is Severity.ERROR


# --------------------------------------------------------------------------- code side


@dataclass(frozen=True, slots=True)
class Edit:
    """Replace the text between (line, column) and (end_line, end_column) with `text`."""

    line: int
    column: int
    end_line: int
    end_column: int
    text: str


@dataclass(frozen=True, slots=True)
class Fix:
    title: str
    applicability: Applicability
    edits: tuple[Edit, ...]
    # The behaviour this fix keeps as it is (e.g. "reentrant" for `use_reentrant=True`): it is not offered
    # at a site where an error finding is caused by that very behaviour (see check/fixes.judge_fixes).
    keeps: str = ""


@dataclass(frozen=True, slots=True)
class Finding:
    """A problem found in a training file or config by `rootrank check`."""

    rule: str
    severity: Severity
    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    message: str
    fixes: tuple[Fix, ...] = ()  # in the rule's order of recommendation; `fix` is the preferred one
    # In a Jupyter notebook: the 1-based cell number (all cells counted, as Jupyter shows them); `line`,
    # `end_line` and the fixes' edits are then positions inside that cell.
    cell: int | None = None
    # The library versions the finding's truth depends on, as assumed: `transformers 4.57.6`, or
    # `transformers: not found` (then the finding is at most a warning and its message names the versions).
    assumes: tuple[str, ...] = ()

    @property
    def fix(self) -> Fix | None:
        """The preferred fix, the one every output names first: the first SAFE fix, else the first
        UNSAFE one (never a DISPLAY_ONLY one). See check/fixes.py."""
        for applicability in (Applicability.SAFE, Applicability.UNSAFE):
            found = next((f for f in self.fixes if f.applicability is applicability and f.edits), None)
            if found is not None:
                return found
        return None

    @property
    def ordered_fixes(self) -> tuple[Fix, ...]:
        """The fixes with the preferred one first, the others in the rule's order."""
        first = self.fix
        return self.fixes if first is None else (first, *(f for f in self.fixes if f is not first))


def ranks_text(ranks: Iterable[int]) -> str:
    """A compact rank list, as people write it: 0-2,4-7 (RankSet.text, for any iterable of ranks)."""
    return (ranks if isinstance(ranks, RankSet) else RankSet(ranks)).text()


def plain(value: Any) -> Any:
    """Turn records into JSON-ready builtins (enums become their values)."""
    if isinstance(value, enum.Enum):
        return value.value
    if hasattr(value, "__dataclass_fields__"):
        return {name: plain(getattr(value, name)) for name in value.__dataclass_fields__}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): plain(v) for k, v in value.items()}
    return value
