"""The other ways a stall is reported and handled: a collective-timeout line seen while the job still
runs (before any threshold), `--kill-on-stall` stopping the job, and the plain explanation when py-spy
cannot be found. Real processes; the waits are for what the watch prints, never fixed sleeps."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

from rootrank.model import Diagnosis
from rootrank.render.watch import stall_notice
from rootrank.watch import WatchOptions, run_command
from rootrank.watch.records import StallReport, WatchStatus
from rootrank.watch.stacks import MISSING
from tests.watch.helpers import Running, children

# Real torch 2.13 gloo text (tests/fixtures/logs/distributed.rank-stalled--2node-rank1-sleeps-past-timeout-per-node-logs).
GLOO_TIMEOUT = ("[rank1]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
                "Timed out waiting 20000ms for recv operation to complete")


def _job(tmp_path: Path, lines: list[str], linger: float) -> Path:
    script = tmp_path / "job.py"
    script.write_text("import sys, time\n"
                      + "".join(f"print({line!r}, flush=True)\n" for line in lines)
                      + f"time.sleep({linger})\n")
    return script


def test_a_collective_timeout_line_is_a_stall_before_any_threshold(tmp_path: Path) -> None:
    job = _job(tmp_path, ["[rank0]: step 1 loss 2.30", "[rank1]: step 1 loss 2.30", GLOO_TIMEOUT], 600)
    # A threshold of ten minutes: only the timeout line can make this stall.
    watch = Running(["watch", "--stall", "600", "--color", "never", "--out", str(tmp_path / "out"), "--",
                     sys.executable, str(job)], tmp_path)
    try:
        seen = watch.wait_for("stderr", b"a collective timed out or hangs", timeout=120)
        assert seen is not None, watch.text("stderr").decode(errors="replace")
        assert watch.process.poll() is None  # the job goes on
        watch.process.send_signal(signal.SIGINT)
        watch.finish(timeout=60)
    finally:
        watch.kill()
    err = watch.text("stderr").decode(errors="replace")
    assert "rootrank: stall" in err and "the job goes on" in err


def test_kill_on_stall_stops_the_job(tmp_path: Path) -> None:
    job = _job(tmp_path, ["step 1 loss 2.30", "step 2 loss 2.10"], 600)
    watch = Running(["watch", "--stall", "1", "--kill-on-stall", "--color", "never", "--out", str(tmp_path / "out"),
                     "--", sys.executable, str(job)], tmp_path)
    try:
        code = watch.finish(timeout=180)  # the job would sleep ten minutes
    finally:
        watch.kill()
    err = watch.text("stderr").decode(errors="replace")
    assert "rootrank: stall" in err and "stopping the job (--kill-on-stall)" in err, err
    assert code != 0
    assert not children(watch.process.pid)


class Collect:
    def __init__(self) -> None:
        self.stalls: list[StallReport] = []

    def cause(self, diagnosis: Diagnosis) -> None:
        pass

    def stall(self, report: StallReport) -> None:
        self.stalls.append(report)

    def status(self, status: WatchStatus) -> None:
        pass


def test_without_py_spy_the_stall_is_reported_and_says_why_there_are_no_stacks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfdbinary: object) -> None:
    python = sys.executable
    # An environment without py-spy: not on PATH, not beside the interpreter rootrank runs in.
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    monkeypatch.setattr(sys, "executable", str(tmp_path / "elsewhere" / "python"))
    job = tmp_path / "job.py"
    job.write_text("import time\nprint('step 1 loss 2.30', flush=True)\n"
                   "deadline = time.monotonic() + 120\n"
                   "while time.monotonic() < deadline and not __import__('os').path.exists('stalled'):\n"
                   "    time.sleep(0.1)\n")
    monkeypatch.chdir(tmp_path)

    class Releasing(Collect):
        def stall(self, report: StallReport) -> None:
            super().stall(report)
            (tmp_path / "stalled").write_text("")  # the job may end once the stall is reported

    sink = Releasing()
    outcome = run_command([python, str(job)], WatchOptions(stall=1, out_dir=tmp_path / "out"), sink, use_pty=False)
    capfdbinary.readouterr()  # type: ignore[attr-defined]
    assert outcome.exit_code == 0
    assert sink.stalls, "no stall reported"
    report = sink.stalls[0]
    assert report.problem == MISSING and not report.stacks_path
    text = stall_notice(report, False)
    assert "py-spy is not installed" in text and "pip install 'rootrank[watch]'" in text
    assert "no rank progressed for" in text
