"""`rootrank watch PATHS...` follows per-rank files another process writes, like tail -F: a file that
appears after the watch began, a file rotated away and replaced; a cause in one of them is reported
while the writer still runs, and the final diagnosis is `rootrank diagnose` over the files."""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

from rootrank.watch.follow import Follower
from tests.watch.helpers import JOBS, Running, environment


def test_the_follower_reads_new_files_rotated_files_and_growth(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    got: dict[str, bytes] = {}
    new: list[str] = []
    rotated: list[str] = []
    follower = Follower([str(logs)], lambda p, d: got.__setitem__(p.name, got.get(p.name, b"") + d),
                        lambda p: new.append(p.name), lambda p: rotated.append(p.name))
    writer = subprocess.Popen([sys.executable, str(JOBS / "rank_writer.py"), str(logs), "30", "0"])
    while writer.poll() is None:
        follower.poll()
        time.sleep(0.05)
    follower.poll()
    follower.close()
    assert writer.returncode == 0
    assert sorted(new) == ["rank0.log", "rank1.log", "rank2.log"]
    assert rotated == ["rank0.log"]
    # Everything written reached the follower: both halves of the rotated file, the late file whole.
    assert got["rank0.log"] == (logs / "rank0.log.1").read_bytes() + (logs / "rank0.log").read_bytes()
    assert got["rank1.log"] == (logs / "rank1.log").read_bytes()
    assert got["rank2.log"] == (logs / "rank2.log").read_bytes()
    assert got["rank2.log"].startswith(b"[rank2]: step 10 ")


def test_watching_files_reports_the_cause_while_the_writer_runs(tmp_path: Path) -> None:
    logs = tmp_path / "logs"
    logs.mkdir()
    (logs / "rank0.log").write_text("[rank0]: starting\n")
    (logs / "rank1.log").write_text("[rank1]: starting\n")
    watch = Running(["watch", "--echo", str(logs)], tmp_path)
    writer: subprocess.Popen[bytes] | None = None
    try:
        # The writer starts once the watch reads the folder (its start-up takes seconds on a loaded
        # machine), so rank2.log and the rotation come while it follows; the writer then lingers until
        # this test has seen the report: no outcome hangs on how fast either side runs.
        assert watch.wait_for("stdout", b"[rank1]: starting", timeout=120) is not None, watch.text("stderr")
        writer = subprocess.Popen([sys.executable, str(JOBS / "rank_writer.py"), str(logs), "30", "hold"],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        assert writer.stdout is not None and writer.stdin is not None
        assert writer.stdout.readline() == b"writer done\n"
        noticed = watch.wait_for("stderr", b"cause found while the job runs", timeout=120)
        assert noticed is not None, watch.text("stderr")
        assert writer.poll() is None, "the cause came only after the writer had ended"
        writer.stdin.close()
        assert writer.wait(30) == 0
        # Every file read to its end before Ctrl-C: the last step of each rank has been echoed.
        for rank in (0, 2):
            assert watch.wait_for("stdout", b"[rank%d]: step 29 " % rank, timeout=60) is not None
        watch.process.send_signal(signal.SIGINT)
        code = watch.finish(timeout=60)
    finally:
        if writer is not None:
            writer.kill()
        watch.kill()
    assert code == 1
    err = watch.text("stderr").decode()
    assert "rank 1" in err.split("cause found while the job runs")[1].splitlines()[1]
    echoed = watch.text("stdout")
    assert b"[rank2]: step 10 " in echoed and b"rotated: rank0.log reopened" in echoed
    assert b"[rank0]: step 14 " in echoed  # the last line written before the rotation
    batch = subprocess.run([sys.executable, "-m", "rootrank", "diagnose", str(logs)], capture_output=True,
                           env=environment(), check=False)
    assert batch.stdout.decode() in err
