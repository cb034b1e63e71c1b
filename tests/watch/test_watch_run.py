"""`rootrank watch -- CMD` with a job that needs no torch: the output passes through byte for byte on
both streams (a clean run adds nothing), the exit status is the job's, a terminal stays a terminal,
a full pipe never stalls the job, Ctrl-C reaches the job's whole process group, bad usage is one line."""

from __future__ import annotations

import os
import pty
import signal
import subprocess
import sys
from pathlib import Path

from tests.watch.helpers import JOBS, Running, children, environment, rootrank_command

CLEAN = JOBS / "clean.py"


def _run(args: list[str]) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(args, capture_output=True, env=environment(), timeout=120, check=False)


def test_a_clean_run_passes_through_byte_for_byte_and_adds_nothing() -> None:
    alone = _run([sys.executable, str(CLEAN)])
    watched = _run([*rootrank_command(), "watch", "--", sys.executable, str(CLEAN)])
    assert watched.returncode == alone.returncode == 0
    assert watched.stdout == alone.stdout
    assert watched.stderr == alone.stderr == b"a warning on stderr\n"


def test_the_exit_status_is_the_jobs_own() -> None:
    watched = _run([*rootrank_command(), "watch", "--", sys.executable, str(CLEAN), "3"])
    assert watched.returncode == 3
    killed = _run([*rootrank_command(), "watch", "--", sys.executable, "-c", "import os; os.kill(os.getpid(), 9)"])
    assert killed.returncode == 128 + 9


def test_on_a_terminal_the_job_gets_a_terminal_and_its_bytes_unchanged() -> None:
    def under_pty(args: list[str]) -> bytes:
        pid, fd = pty.fork()
        if pid == 0:  # the child: run the command with the pseudo-terminal as its terminal
            os.execve(args[0], args, environment())
        out = b""
        while True:
            try:
                data = os.read(fd, 65536)
            except OSError:
                break
            if not data:
                break
            out += data
        os.waitpid(pid, 0)
        return out

    alone = under_pty([sys.executable, str(CLEAN)])
    watched = under_pty([*rootrank_command(), "watch", "--", sys.executable, str(CLEAN)])
    assert b"\x1b[32mcolour" in alone and b"tty\r\n" in alone
    assert watched == alone


def test_a_job_printing_as_fast_as_it_can_gets_all_its_output_through(tmp_path: Path) -> None:
    # The diagnosis may lag behind; the pump never waits for it: 20 MB come through whole.
    script = tmp_path / "flood.py"
    script.write_text("import sys\nline = b'x' * 99 + b'\\n'\nfor _ in range(200_000):\n"
                      "    sys.stdout.buffer.write(line)\n")
    watched = _run([*rootrank_command(), "watch", "--", sys.executable, str(script)])
    assert watched.returncode == 0
    assert len(watched.stdout) == 20_000_000 and watched.stderr == b""


def test_ctrl_c_reaches_the_jobs_process_group_and_rootrank_reports(tmp_path: Path) -> None:
    script = tmp_path / "launcher.py"
    script.write_text(
        "import signal, subprocess, sys, time\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time, signal\\n"
        "signal.signal(signal.SIGINT, lambda *a: (print(\"worker got SIGINT\", flush=True), exit(3)))\\n"
        "print(\"worker up\", flush=True)\\ntime.sleep(60)'])\n"
        "try:\n    print('launcher waits', flush=True)\n    child.wait()\nexcept KeyboardInterrupt:\n"
        "    print('launcher got SIGINT', flush=True); child.wait(); sys.exit(130)\n")
    watch = Running(["watch", "--", sys.executable, str(script)], tmp_path)
    try:
        # Both handlers are in place once both lines came: the launcher's try block, the worker's handler.
        assert watch.wait_for("stdout", b"worker up", timeout=120) is not None
        assert watch.wait_for("stdout", b"launcher waits", timeout=120) is not None
        watch.process.send_signal(signal.SIGINT)
        code = watch.finish(timeout=60)
    finally:
        watch.kill()
    out = watch.text("stdout")
    assert b"worker got SIGINT" in out and b"launcher got SIGINT" in out
    assert code == 130
    assert b"rootrank: interrupted" in watch.text("stderr")
    assert not children(watch.process.pid)


def test_bad_usage_is_one_line_and_status_2(tmp_path: Path) -> None:
    for args in (["watch"], ["watch", "--"], ["watch", "--stall", "0", "--", "true"],
                 ["watch", "--", str(tmp_path / "no-such-program")]):
        done = _run([*rootrank_command(), *args])
        assert done.returncode == 2, (args, done)
        assert len(done.stderr.decode().strip().splitlines()) <= 2 and b"rootrank" in done.stderr
        assert b"Traceback" not in done.stderr


def test_an_editor_gets_a_status_file_when_it_asks_for_one(tmp_path: Path) -> None:
    import json

    env = dict(environment(), ROOTRANK_WATCH_STATUS_DIR=str(tmp_path / "status"))
    done = subprocess.run([*rootrank_command(), "watch", "--", sys.executable, str(CLEAN), "3"], capture_output=True,
                          env=env, timeout=120, check=False)
    assert done.returncode == 3
    (status_file,) = (tmp_path / "status").glob("*.json")
    status = json.loads(status_file.read_text())
    assert status["schema"] == "rootrank.watch-status/1"
    assert status["state"] == "done" and status["exit_code"] == 3 and status["step"] == 199
    assert status["command"][-1] == "3"
