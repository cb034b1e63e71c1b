"""`rootrank watch -`: the job's output comes on stdin (the editor hands over a terminal command's output
from shell integration). A cause is reported while the input is still open, the final diagnosis equals
`rootrank diagnose` on the same bytes, and the status file an editor reads points at the report."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path

from tests.watch.helpers import Running, environment

FIXTURES = Path(__file__).parents[1] / "fixtures" / "logs"
# A real 3-rank gloo run (torch 2.13 CPU) where rank 1 raised.
RAISED = FIXTURES / "distributed.collective-mismatch--rank1-allreduce-shape-3ranks-debug-detail" / "log.txt"


def test_output_on_stdin_is_watched_and_the_final_diagnosis_is_the_batch_one(tmp_path: Path) -> None:
    status_dir = tmp_path / "status"
    env = dict(environment(), ROOTRANK_WATCH_STATUS_DIR=str(status_dir))
    process = subprocess.Popen([sys.executable, "-m", "rootrank", "watch", "-", "--label", "torchrun train.py",
                                "--color", "never"], cwd=tmp_path, env=env, stdin=subprocess.PIPE,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert process.stdin is not None and process.stderr is not None
    data = RAISED.read_bytes()
    try:
        # In pieces, as a terminal delivers it; the input stays open after the last piece.
        for start in range(0, len(data), 4096):
            process.stdin.write(data[start:start + 4096])
            process.stdin.flush()
            time.sleep(0.01)
        deadline = time.monotonic() + 120
        status: dict[str, object] = {}
        while time.monotonic() < deadline:
            files = list(status_dir.glob("*.json"))
            if files:
                try:
                    status = json.loads(files[0].read_text())
                except ValueError:
                    status = {}
                if status.get("state") == "failed":
                    break
            time.sleep(0.1)
        assert status.get("state") == "failed", status
        assert process.poll() is None, "the watch ended before its input did"
        assert status["command"] == ["torchrun train.py"]
        assert "rank 1" in str(status["text"]), status
        process.stdin.close()
        code = process.wait(60)
        err = process.stderr.read().decode()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
    assert code == 1
    assert "cause found while the job runs" in err
    saved = tmp_path / "log.txt"
    saved.write_bytes(data)
    batch = subprocess.run([sys.executable, "-m", "rootrank", "diagnose", str(saved)], capture_output=True,
                           env=environment(), check=False)
    assert batch.stdout.decode().strip() in err
    (status_file,) = status_dir.glob("*.json")
    final = json.loads(status_file.read_text())
    assert final["state"] == "failed"
    assert (Path(final["report"]) / "report.json").is_file()  # what the status bar's click opens


def test_a_silent_input_is_reported_as_a_stall_while_it_stays_open(tmp_path: Path) -> None:
    watch = Running(["watch", "-", "--stall", "1", "--color", "never"], tmp_path, stdin=subprocess.PIPE)
    stdin = watch.process.stdin
    assert stdin is not None
    try:
        stdin.write(b"step 1 loss 2.30\nstep 2 loss 2.10\n")
        stdin.flush()
        # However late rootrank starts reading, the input stays open and silent until the stall is seen.
        reported = watch.wait_for("stderr", b"rootrank: stall", timeout=120)
        assert reported is not None, watch.text("stderr")
        assert watch.process.poll() is None, "the watch ended before its input did"
        stdin.close()
        assert watch.finish(timeout=60) == 0
    finally:
        watch.kill()
    assert b"no rank progressed for" in watch.text("stderr")
