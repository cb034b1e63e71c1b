"""Golden diagnoses of real logs: one folder per case under tests/fixtures/logs (and examples/).

Each case holds `log.txt` (or `logs/`, the several files of one run), the script that produced it and
`expect.yaml`: `family` (the entry id, or `none` for a clean run), `initiating_rank`, `collateral_ranks`,
`evidence` (substrings of the log), `host` (the machine named, for host-level evidence), and `known_limitation` when the log cannot tell (an expected
failure that must keep failing until the mechanism improves). A new case is a new folder.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from rootrank.diagnose import diagnose_paths
from rootrank.model import Severity
from tests.conftest import EXAMPLES, FIXTURE_LOGS


def _case(path: Path) -> object:
    expect = yaml.safe_load((path / "expect.yaml").read_text())
    reason = expect.get("known_limitation")
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(path, id=path.name, marks=marks)


CASES = [_case(p.parent) for root in (FIXTURE_LOGS, EXAMPLES) for p in sorted(root.glob("*/expect.yaml"))]


def _inputs(case: Path) -> list[str]:
    logs = case / "logs"
    if logs.is_dir():
        return sorted(str(f) for f in logs.rglob("*") if f.is_file())
    return [str(case / "log.txt")]


@pytest.mark.parametrize("case", CASES)
def test_fixture_diagnosis(case: Path) -> None:
    expect = yaml.safe_load((case / "expect.yaml").read_text())
    family = expect.get("family") or "none"
    diagnosis = diagnose_paths(_inputs(case))
    root = diagnosis.root_cause
    if family == "none":
        assert root is None or root.severity is not Severity.ERROR, f"false alarm: {root}"
        return
    accepted = {family, *(expect.get("accept") or [])}
    assert root is not None, "no root cause found"
    assert root.rule in accepted, f"root cause {root.rule}, expected one of {sorted(accepted)}"
    want_rank = expect.get("initiating_rank")
    if isinstance(want_rank, int) and not isinstance(want_rank, bool):
        assert root.rank == want_rank, f"initiating rank {root.rank}, expected {want_rank}: {root.why}"
    # The line the diagnosis shows as the failure, where the case pins it (the exception line, say, not the
    # frame or the echoed source before it).
    if expect.get("stated_line") is not None:
        assert root.line == expect["stated_line"], f"the failure is shown at line {root.line}"
    want_host = expect.get("host")
    if want_host:
        assert root.host == want_host, f"host {root.host}, expected {want_host}: {root.why}"
    logs = [case / "log.txt", *sorted(f for f in (case / "logs").rglob("*") if f.is_file())]
    text = "\n".join(p.read_text(errors="replace") for p in logs if p.is_file())
    for evidence in expect.get("evidence") or []:
        assert evidence in text, f"expect.yaml evidence not in the log: {evidence!r}"
    # The diagnosis must show the proof: one of the case's evidence strings is among its evidence lines.
    expected = [*(expect.get("evidence") or []),
                *(text for texts in (expect.get("evidence_files") or {}).values() for text in texts)]
    shown = "\n".join(e.text for e in root.evidence) + "\n" + root.why
    if expected:
        assert any(ev.strip() in shown for ev in expected), f"none of {expected} in the evidence:\n{shown}"
    collateral = {c.rank for c in diagnosis.collateral}
    expected_collateral = set(expect.get("collateral_ranks") or [])
    if expected_collateral and isinstance(want_rank, int):
        assert want_rank not in collateral
        assert collateral <= expected_collateral, f"collateral {sorted(collateral)} vs {sorted(expected_collateral)}"


def test_a_rank_whose_own_traceback_is_cut_keeps_the_named_rank_from_high_confidence() -> None:
    case = FIXTURE_LOGS / "megatron.parallel-size-mismatch--bionemo-784-srun-two-ranks-one-cut-traceback"
    root = diagnose_paths([case / "log.txt"]).root_cause
    assert root is not None and root.confidence is not None
    assert root.confidence.rank.level != "high" and "rank(s) 2 printed a traceback" in root.confidence.rank.reason


def test_a_rank_whose_traceback_header_alone_is_shown_keeps_the_named_rank_from_high_confidence() -> None:
    case = FIXTURE_LOGS / "checkpoint.recompute-mismatch--torchtitan-1117-rank11-then-rank13-traceback-header"
    root = diagnose_paths([case / "log.txt"]).root_cause
    assert root is not None and root.confidence is not None and root.rank == 11
    assert root.confidence.rank.level == "medium" and "rank(s) 13 printed a traceback" in root.confidence.rank.reason


@pytest.mark.parametrize("name", [
    "distributed.collective-mismatch--nccl-1409-two-ranks-two-collectives-same-seq",
    "distributed.collective-timeout--discoscene-5-rank7-watchdog-others-sigtermed",
    "distributed.rank-stalled--megatron-ds-338-store-barrier-waiters-only",
    "distributed.collective-timeout--verl-1158-last-line-cut-after-rank6-prefix",
])
def test_logs_that_do_not_tell_the_rank_name_none(name: str) -> None:
    root = diagnose_paths([FIXTURE_LOGS / name / "log.txt"]).root_cause
    assert root is not None and root.rank is None, root.why if root else None
