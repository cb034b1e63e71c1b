"""Running the job under rootrank: its output passes through untouched, and a copy goes to the watch.

- On a terminal the job gets a pseudo-terminal of the same size for its stdout and stderr, so it keeps
  its colours and progress bars; its output-newline translation is off, so the bytes that come out are
  the job's own (the real terminal translates them, as it would without rootrank). Elsewhere it gets
  one pipe per stream, copied to the same stream of rootrank.
- The pump copies every read at once and hands the watch only a copy (the diagnosis reads in another
  thread, without ever making the pump wait), so the job never blocks on a full pipe because of
  rootrank; it waits only where it would have waited without it, on a slow reader of our output.
- The job runs in its own process group: Ctrl-C (and SIGTERM, SIGHUP) is forwarded to that whole group,
  as a terminal does for torchrun and its workers; rootrank itself goes on to say what it knows.
- The exit code is the job's own (128 + N when signal N ended it).
"""

from __future__ import annotations

import contextlib
import errno
import os
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

READ_BYTES = 1 << 20
PIPE_BYTES = 1 << 20  # the job's pipes hold this much (Linux): fewer, bigger reads
# While the diagnosis thread works, the pump must get the interpreter lock back at once after each
# read and write (the default 5 ms switch interval would cap the pass-through at a pipe buffer per 5 ms).
SWITCH_INTERVAL = 0.0002
DRAIN_AFTER_EXIT = 2.0  # seconds to wait for output still in flight once the job has exited
FORWARDED: tuple[int, ...] = (signal.SIGINT, signal.SIGTERM) + ((signal.SIGHUP,) if hasattr(signal, "SIGHUP") else ())


@dataclass
class Job:
    """A started job: its process, and (fd it writes to, where rootrank copies it, stream name)."""

    process: subprocess.Popen[bytes]
    outputs: list[tuple[int, int, str]]
    interrupted: list[int] = field(default_factory=list)  # signals forwarded to it

    @property
    def pid(self) -> int:
        return self.process.pid

    def signal_group(self, signum: int) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.process.pid, signum)

    def stop(self, grace: float = 10.0) -> None:
        """SIGTERM the job's group, SIGKILL it after `grace` seconds."""
        self.signal_group(signal.SIGTERM)
        try:
            self.process.wait(grace)
        except subprocess.TimeoutExpired:
            self.signal_group(signal.SIGKILL)


def start(command: Sequence[str], use_pty: bool | None = None) -> Job:
    """Start `command` with its output on a pseudo-terminal (when ours is one) or pipes. Raises OSError
    (e.g. FileNotFoundError) when it cannot start."""
    stdout = sys.stdout.fileno()
    stderr = sys.stderr.fileno()
    if use_pty is None:
        use_pty = os.isatty(stdout) and os.name == "posix"
    if use_pty:
        import pty

        master, slave = pty.openpty()
        _same_size(stdout, slave)
        _raw_output(slave)
        try:
            process = subprocess.Popen(list(command), stdout=slave, stderr=slave, **_own_group())
        finally:
            os.close(slave)
        return Job(process, [(master, stdout, "tty")])
    process = subprocess.Popen(list(command), stdout=subprocess.PIPE, stderr=subprocess.PIPE, **_own_group())
    assert process.stdout is not None and process.stderr is not None
    for pipe in (process.stdout, process.stderr):
        _bigger_pipe(pipe.fileno())
    return Job(process, [(process.stdout.fileno(), stdout, "stdout"), (process.stderr.fileno(), stderr, "stderr")])


def _own_group() -> dict[str, Any]:
    """Popen arguments that start the job in a process group of its own."""
    if sys.version_info >= (3, 11):
        return {"process_group": 0}
    return {"preexec_fn": os.setpgrp}


def _bigger_pipe(fd: int) -> None:
    import fcntl

    setsize = getattr(fcntl, "F_SETPIPE_SZ", None)
    if setsize is not None:
        with contextlib.suppress(OSError):
            fcntl.fcntl(fd, setsize, PIPE_BYTES)


def _same_size(ours: int, slave: int) -> None:
    import fcntl
    import termios

    with contextlib.suppress(OSError):
        size = fcntl.ioctl(ours, termios.TIOCGWINSZ, b"\0" * 8)
        fcntl.ioctl(slave, termios.TIOCSWINSZ, size)


def _raw_output(slave: int) -> None:
    import termios

    with contextlib.suppress(termios.error):
        attrs = termios.tcgetattr(slave)
        attrs[1] &= ~termios.ONLCR  # oflag: the job's "\n" stays "\n"
        termios.tcsetattr(slave, termios.TCSANOW, attrs)


class Pump(threading.Thread):
    """Copies the job's output to ours, and hands each read to `sinks[name]`."""

    def __init__(self, job: Job, sinks: dict[str, Callable[[bytes], None]],
                 write_lock: threading.Lock) -> None:
        super().__init__(name="rootrank-pump", daemon=True)
        self.job = job
        self.sinks = sinks
        self.lock = write_lock
        self.ended_with_newline = True  # the last byte copied ended a line (notices start on a fresh line)
        self.error: BaseException | None = None

    def run(self) -> None:
        previous = sys.getswitchinterval()
        sys.setswitchinterval(SWITCH_INTERVAL)
        selector = selectors.DefaultSelector()
        try:
            for fd, out, name in self.job.outputs:
                selector.register(fd, selectors.EVENT_READ, (out, name))
            open_fds = len(self.job.outputs)
            exited_at: float | None = None
            while open_fds:
                events = selector.select(0.2)
                for key, _ in events:
                    out, name = key.data
                    try:
                        data = os.read(key.fd, READ_BYTES)
                    except OSError as exc:
                        if exc.errno != errno.EIO:  # EIO: the pseudo-terminal's last writer has gone
                            raise
                        data = b""
                    if not data:
                        selector.unregister(key.fd)
                        open_fds -= 1
                        continue
                    with self.lock:
                        _write_all(out, data)
                        self.ended_with_newline = data.endswith(b"\n")
                    if self.error is None:
                        try:
                            self.sinks[name](data)
                        except Exception as exc:  # the watch broke: the job's output still flows
                            self.error = exc
                if self.job.process.poll() is not None:
                    # Children of the job (a daemon it left) may hold the output open: not for ever.
                    exited_at = exited_at or time.monotonic()
                    if not events and time.monotonic() - exited_at > DRAIN_AFTER_EXIT:
                        break
        except BaseException as exc:  # the job must keep its output even if the watch breaks
            self.error = exc
        finally:
            selector.close()
            sys.setswitchinterval(previous)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        try:
            n = os.write(fd, view)
        except BrokenPipeError:
            return  # our reader went away; the job goes on as it would with a closed terminal
        except BlockingIOError:
            time.sleep(0.001)
            continue
        view = view[n:]


def exit_code(returncode: int) -> int:
    """The job's status as a shell reports it."""
    return 128 - returncode if returncode < 0 else returncode


@contextlib.contextmanager
def forwarding(job: Job, on_signal: Callable[[int], None] | None = None) -> Iterator[None]:
    """While inside, SIGINT/SIGTERM/SIGHUP sent to rootrank go to the job's process group instead."""
    previous: dict[int, Any] = {}

    def forward(signum: int, _frame: object) -> None:
        job.interrupted.append(signum)
        job.signal_group(signum)
        if on_signal is not None:
            on_signal(signum)

    for signum in FORWARDED:
        with contextlib.suppress(ValueError, OSError):  # not the main thread
            previous[signum] = signal.signal(signum, forward)
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
