"""A launched job that floods its output: the pass-through gets every byte, the diagnosis reads a sample
of the flood within its budget (session.Budget) and always the flood's end, where a failure shows; a job
printing under the budget is read entirely."""

from __future__ import annotations

import sys
from pathlib import Path

from rootrank.diagnose import diagnose_paths
from rootrank.model import Diagnosis
from rootrank.watch import WatchOptions, run_command
from rootrank.watch.records import StallReport, WatchStatus
from rootrank.watch.session import Budget, Stream, Watch

FIXTURES = Path(__file__).parents[1] / "fixtures" / "logs"
# A real 3-rank gloo run (torch 2.13 CPU) where rank 1 raised.
RAISED = FIXTURES / "distributed.collective-mismatch--rank1-allreduce-shape-3ranks-debug-detail" / "log.txt"

FLOOD_THEN_FAIL = """
import sys
out = sys.stdout.buffer
lines = b"".join(b"[rank%d]: step %d | loss 0.%04d | lr 3.0e-04\\n" % (i % 3, i, i % 9973) for i in range(10000))
for _ in range(int(sys.argv[1]) * (1 << 20) // len(lines)):
    out.write(lines)
out.write(open(sys.argv[2], "rb").read())
out.flush()
sys.exit(1)
"""


class Collect:
    def __init__(self) -> None:
        self.causes: list[Diagnosis] = []

    def cause(self, diagnosis: Diagnosis) -> None:
        self.causes.append(diagnosis)

    def stall(self, report: StallReport) -> None:
        pass

    def status(self, status: WatchStatus) -> None:
        pass


def test_a_flood_is_sampled_and_its_final_failure_still_found(tmp_path: Path, capfdbinary: object) -> None:
    job = tmp_path / "flood.py"
    job.write_text(FLOOD_THEN_FAIL)
    sink = Collect()
    outcome = run_command([sys.executable, str(job), "64", str(RAISED)], WatchOptions(), sink, use_pty=False)
    out = capfdbinary.readouterr().out  # type: ignore[attr-defined]
    assert outcome.exit_code == 1
    assert out.endswith(RAISED.read_bytes())  # the pass-through has every byte
    assert len(out) > 60 << 20
    assert outcome.watch.budget is not None and outcome.watch.budget.sampled > 0  # the flood was sampled
    final = outcome.diagnosis
    assert final is not None and final.root_cause is not None
    expected = diagnose_paths([str(RAISED)]).root_cause
    assert expected is not None
    assert (final.root_cause.rule, final.root_cause.rank) == (expected.rule, expected.rank)


def test_a_job_under_the_budget_is_read_whole(tmp_path: Path, capfdbinary: object) -> None:
    job = tmp_path / "flood.py"
    job.write_text(FLOOD_THEN_FAIL)
    outcome = run_command([sys.executable, str(job), "1", str(RAISED)], WatchOptions(), Collect(), use_pty=False)
    capfdbinary.readouterr()  # type: ignore[attr-defined]
    assert outcome.watch.budget is not None and outcome.watch.budget.sampled == 0


class Recorder:
    def __init__(self) -> None:
        self.pieces: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.pieces.append(bytes(data))


def test_over_the_budget_a_stream_holds_only_whole_latest_lines_in_order() -> None:
    now = [0.0]
    watch = Watch(WatchOptions(), Collect(), lambda: [], clock=lambda: now[0])
    watch.budget = Budget(lambda: now[0])
    watch.budget.tokens = 0.0
    recorder = Recorder()
    stream = Stream(watch, recorder)  # type: ignore[arg-type]
    lines = [b"line %07d of the flood\n" % i for i in range(40000)]
    data = b"".join(lines)
    for start in range(0, len(data), 100_003):  # reads that cut lines anywhere
        stream.write(data[start:start + 100_003])
    stream.flush()
    read = b"".join(recorder.pieces)
    assert read and len(read) <= Budget.SAMPLE_TAIL_BYTES + 100_003
    assert read.endswith(lines[-1])  # the flood's end
    assert data.endswith(read) or read in data
    assert all(piece.endswith(b"\n") for piece in recorder.pieces)
    assert watch.budget.sampled == len(data) - len(read)
    # With the bucket refilled, everything is read again, the held lines first.
    now[0] += 100.0
    more = b"after the flood\n"
    stream.write(more)
    assert recorder.pieces[-1] == more
