"""`rootrank watch -- torchrun ...` on real jobs (CPU torch, gloo, 3 ranks): the hung rank named from
its stack long before the collective's timeout; a rank that raises diagnosed while the job still runs,
and the final diagnosis the same as `rootrank diagnose` on the saved output."""

from __future__ import annotations

import json
import re
import signal
import subprocess
from pathlib import Path

import pytest

from tests.heavy import require_module, require_program
from tests.watch.helpers import JOBS, Running, children, environment, rootrank_command, torchrun

GLOO_TIMEOUT = 300  # the jobs' process-group timeout


def _without_names(value: object) -> object:
    """The diagnosis without the input's name ("-" for the live stream, the file's path for the batch)."""
    if isinstance(value, dict):
        return {k: _without_names(v) for k, v in value.items() if k not in ("source", "sources")}
    if isinstance(value, list):
        return [_without_names(v) for v in value]
    return value


def _line_of(script: Path, text: str) -> int:
    return next(i for i, line in enumerate(script.read_text().splitlines(), 1) if text in line)


@pytest.fixture
def job_dir(tmp_path: Path) -> Path:
    for script in JOBS.glob("*.py"):
        (tmp_path / script.name).write_bytes(script.read_bytes())
    return tmp_path


def test_the_hung_rank_is_named_with_its_line_before_the_timeout(job_dir: Path) -> None:
    require_module("torch")
    require_program("py-spy")
    sleeping = _line_of(job_dir / "hang_rank1.py", "time.sleep(3600)")
    out = job_dir / "out"
    watch = Running(["watch", "--stall", "3", "--out", str(out), "--",
                     *torchrun(), "--nproc-per-node", "3", "hang_rank1.py"], job_dir)
    try:
        reported = watch.wait_for("stderr", b"hung:", timeout=240)
        assert reported is not None, watch.text("stderr").decode(errors="replace")[-3000:]
        last_step = max(at for at, line in watch.lines["stdout"] if b" step " in line)
        assert reported - last_step < GLOO_TIMEOUT / 5, (reported, last_step)
        hung = next(line for _, line in watch.lines["stderr"] if b"hung:" in line).decode()
        assert re.search(rf"rank 1 is not in the collective: it is at hang_rank1\.py:{sleeping} in train_step", hung), hung
        assert "0, 2 wait in all_reduce" in hung, hung
        # Still running: rootrank never stops a job by itself.
        assert watch.process.poll() is None and children(watch.process.pid)
        stacks = next(out.glob("stacks-*.txt")).read_text()
        assert f"train_step (hang_rank1.py:{sleeping})" in stacks
        assert stacks.count("all_reduce (") >= 2
        # Ctrl-C, as a user would: forwarded to torchrun and its workers; rootrank says what it knows.
        watch.process.send_signal(signal.SIGINT)
        code = watch.finish(timeout=90)
        assert code != 0
        tail = watch.text("stderr").decode(errors="replace")
        assert "rootrank: interrupted" in tail
        after = tail.split("rootrank: interrupted")[-1]
        assert f"rank 1 is not in the collective: it is at hang_rank1.py:{sleeping}" in after
        # The output's own account agrees: the interrupt, and rank 1 outside torch while the others waited.
        assert re.search(r"Root cause +rank 1 .*\[process\.interrupted\]", after), after[-3000:]
    finally:
        watch.kill()


def test_a_rank_that_raises_is_diagnosed_while_the_job_runs(job_dir: Path) -> None:
    require_module("torch")
    out = job_dir / "out"
    saved = job_dir / "saved.log"
    # After its traceback rank 1 flushes its metrics until the flush is acknowledged (its exit handler
    # waits for `metrics-acked`, written below once the report is seen): the job outlives the traceback
    # however slowly a loaded machine runs rootrank, and the launcher's monitor ticks cannot end it first.
    watch = Running(["watch", "--out", str(out), "--log", str(saved), "--",
                     *torchrun(), "--nproc-per-node", "3", "--monitor-interval", "1", "raise_rank1.py"], job_dir)
    try:
        noticed = watch.wait_for("stderr", b"cause found while the job runs", timeout=240)
        assert noticed is not None, watch.text("stderr").decode(errors="replace")[-3000:]
        alive_then = watch.process.poll() is None and bool(children(watch.process.pid))
        (job_dir / "metrics-acked").write_text("")
        code = watch.finish(timeout=180)
    finally:
        (job_dir / "metrics-acked").write_text("")
        watch.kill()
    assert alive_then, "the cause was only reported after the job had ended"
    assert code == 1  # torchrun's own exit status
    err = watch.text("stderr").decode(errors="replace")
    notice = err.split("cause found while the job runs")[1]
    assert "rank 1" in notice.splitlines()[1] and "ValueError: malformed record" in notice
    assert "the job exited with status 1" in err
    final = json.loads((out / "report.json").read_text())
    batch = subprocess.run([*rootrank_command(), "diagnose", "--format", "json", str(saved)], capture_output=True,
                           env=environment(), check=False)
    assert batch.returncode == 1
    assert _without_names(json.loads(batch.stdout)) == _without_names(final)
    assert final["root_cause"]["rank"] == 1
    # What was saved is what the job printed: rootrank's stdout holds the job's stdout, byte for byte.
    assert set(watch.text("stdout").splitlines()) <= set(saved.read_bytes().splitlines())
