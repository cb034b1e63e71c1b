"""The live diagnosis (diagnose/live.py): bytes fed as they arrive, in any pieces, give exactly the batch
diagnosis of the finished output, for every real log we hold (tests/fixtures/logs, examples/, and the
shared corpus when it is there); snapshots while it runs; bounded pending memory."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from rootrank.diagnose import diagnose_paths
from rootrank.diagnose.live import LiveDiagnosis
from rootrank.model import Diagnosis
from rootrank.render.json import diagnosis_to_json
from tests.conftest import EXAMPLES, FIXTURE_LOGS

CORPUS = Path("/work/shared/corpus")


def _cases() -> list[Path]:
    roots = [FIXTURE_LOGS, EXAMPLES] + ([CORPUS] if CORPUS.is_dir() else [])
    return [p.parent for root in roots for p in sorted(root.glob("*/expect.yaml"))]


def _inputs(case: Path) -> list[str]:
    logs = case / "logs"
    if logs.is_dir():
        return sorted(str(f) for f in logs.rglob("*") if f.is_file())
    return [str(case / "log.txt")]


def _feed(live: LiveDiagnosis, files: list[str], sizes: tuple[int, ...], drain_every: int) -> Diagnosis:
    for name in files:
        live.start_source(name, name)
        data = Path(name).read_bytes()
        pos = 0
        step = 0
        while pos < len(data):
            size = sizes[step % len(sizes)]
            live.write(data[pos: pos + size])
            pos += size
            step += 1
            if drain_every and step % drain_every == 0:
                _drain(live)
    final = live.close(timeout=120)
    assert live.error is None
    assert final is not None
    return final


def _drain(live: LiveDiagnosis) -> None:
    """Wait until the pipeline has read what was handed over, so the next bytes come as a new read."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        feed = live._current
        if feed is None or feed.pending == 0:
            return
        time.sleep(0.0005)


@pytest.mark.parametrize("case", _cases(), ids=lambda p: p.name)
def test_fed_as_it_arrives_equals_the_batch_diagnosis(case: Path) -> None:
    files = _inputs(case)
    batch = diagnosis_to_json(diagnose_paths(files))
    # Pieces that cut lines anywhere, read by the pipeline while more is still coming.
    live = LiveDiagnosis(interval=0.0)
    assert diagnosis_to_json(_feed(live, files, (1, 13, 700, 4096, 65537, 3), drain_every=7)) == batch


def test_snapshots_come_while_it_runs_and_the_cause_shows_before_the_end() -> None:
    log = FIXTURE_LOGS / "process.uncaught-exception--rank2-valueerror-step3-no-record" / "log.txt"
    lines = log.read_bytes().splitlines(keepends=True)
    cause_at = next(i for i, line in enumerate(lines) if line.startswith(b"[rank2]: ValueError"))
    seen: list[str | None] = []
    live = LiveDiagnosis(on_update=lambda d: seen.append(d.root_cause.rule if d.root_cause else None), interval=0.0)
    live.start_source(str(log))
    for line in lines[: cause_at + 1]:
        live.write(line)
        _drain(live)
    deadline = time.monotonic() + 10
    while "process.uncaught-exception" not in seen and time.monotonic() < deadline:
        live.write(b"")
        time.sleep(0.01)
    assert "process.uncaught-exception" in seen, seen
    for line in lines[cause_at + 1:]:
        live.write(line)
    final = live.close(timeout=60)
    assert final is not None and final.root_cause is not None
    assert final.root_cause.rank == 2


def test_pending_bytes_are_bounded_and_dropped_bytes_counted() -> None:
    live = LiveDiagnosis(max_pending=1000)
    live.start_source("-")
    live.write(b"y" * 2000)  # more than may wait unread: dropped, never buffered
    live.write(b"[rank0]: step 1\n")
    assert live.dropped == 2000
    final = live.close(timeout=30)
    assert final is not None and final.lines_read == 1
