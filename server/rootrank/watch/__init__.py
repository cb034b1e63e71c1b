"""`rootrank watch`: a job while it runs. Its output passes through untouched; the diagnosis engine
reads it as it comes (diagnose/live.py) and names a cause the moment one appears; the job's rhythm is
learnt from its progress lines (rhythm.py), and a stall gets every rank's Python stack and the name of
the rank that is not where the others wait (stacks.py, ranks.py).

- `run_command(command, options, sink)` starts the job (job.py) and watches it to its end.
- `follow_paths(paths, options, sink, pids, stop)` follows files another process writes (follow.py).
- `watch_input(source, options, sink, pids)` reads a job's output from a stream until it ends (`rootrank
  watch -`: the editor hands over a terminal command's output through shell integration).

Front ends give a `Sink` (session.py) and print or show what it receives; nothing here prints.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from rootrank.diagnose import diagnose_paths
from rootrank.diagnose.live import LiveDiagnosis
from rootrank.model import Diagnosis
from rootrank.watch import job as job_mod
from rootrank.watch.follow import POLL, Follower
from rootrank.watch.ranks import ranks_of_job, ranks_on_machine
from rootrank.watch.session import Budget, Feeder, Sink, Stream, Watch, WatchOptions

__all__ = ["Outcome", "Sink", "WatchOptions", "follow_paths", "run_command", "watch_input"]

TICK = 0.25


@dataclass(frozen=True)
class Outcome:
    """How a watch ended: the job's exit code (None when following files), the final diagnosis."""

    exit_code: int | None
    diagnosis: Diagnosis | None
    interrupted: bool
    watch: Watch
    error: BaseException | None = None  # the watch broke (the job ran on, its output passed through)


def run_command(command: Sequence[str], options: WatchOptions, sink: Sink, use_pty: bool | None = None,
                on_started: Callable[[job_mod.Job, threading.Lock, job_mod.Pump], None] | None = None) -> Outcome:
    """Run `command` under the watch; returns when it has exited and its output is read."""
    started = job_mod.start(command, use_pty)
    def kill() -> None:
        watch.quiet = True
        threading.Thread(target=started.stop, name="rootrank-stop", daemon=True).start()

    watch = Watch(options, sink, lambda: ranks_of_job(started.pid), kill)
    live: LiveDiagnosis | None = None
    streams: dict[str, Stream] = {}
    for _, _, name in started.outputs:
        stream = watch.stream("-", None, live)
        live = stream.live
        streams[name] = stream
    watch.budget = Budget()
    feeder = Feeder()
    feeder.start()
    lock = threading.Lock()
    pump = job_mod.Pump(started, {name: feeder.sink(s) for name, s in streams.items()}, lock)
    pump.start()
    if on_started is not None:
        on_started(started, lock, pump)
    def stopping(_signum: int) -> None:
        watch.quiet = True

    with job_mod.forwarding(started, stopping):
        while True:
            try:
                started.process.wait(TICK)
                break
            except Exception:  # TimeoutExpired
                watch.tick(alive=True)
        pump.join(job_mod.DRAIN_AFTER_EXIT + 5)
    feeder.close(120)
    code = job_mod.exit_code(started.process.returncode)
    interrupted = bool(started.interrupted)
    final = watch.finish(list(streams.values()), code, "interrupted" if interrupted else "done")
    error = pump.error or feeder.error or next((live.error for live in watch.lives if live.error is not None), None)
    return Outcome(code, final, interrupted, watch, error)


def follow_paths(paths: Sequence[str], options: WatchOptions, sink: Sink, pids: Sequence[int] = (),
                 stop: threading.Event | None = None, echo: Callable[[Path, bytes], None] | None = None,
                 ) -> Outcome:
    """Follow `paths` (files, folders of per-rank files) until `stop` is set or Ctrl-C; the final
    diagnosis is the batch one over every file followed."""
    stop = stop or threading.Event()
    watch = Watch(options, sink, lambda: ranks_on_machine(list(pids)))
    streams: dict[Path, Stream] = {}

    def on_new(path: Path) -> None:
        streams[path] = watch.stream(str(path), str(path))

    def on_rotated(path: Path) -> None:
        old = streams[path]
        old.flush()
        old.live.start_source(str(path), str(path))  # the new file is a new source

    def on_data(path: Path, data: bytes) -> None:
        if echo is not None:
            echo(path, data)
        streams[path].write(data)

    follower = Follower(list(paths), on_data, on_new, on_rotated)
    interrupted = False
    try:
        while not stop.is_set():
            follower.poll()
            watch.tick(alive=True)
            stop.wait(POLL)
    except KeyboardInterrupt:
        interrupted = True
    follower.poll()
    follower.close()
    watch.finish(list(streams.values()), None, "interrupted" if interrupted else "done")
    files = [str(p) for p in streams]
    final = diagnose_paths(files) if files else None
    if final is not None and final.failed:
        watch.failed = final
    return Outcome(None, final, interrupted, watch)




def watch_input(source: BinaryIO, options: WatchOptions, sink: Sink, pids: Sequence[int] = (),
                stop: threading.Event | None = None) -> Outcome:
    """Watch the output read from `source` (a pipe: stdin) until it ends, `stop` is set or Ctrl-C. The
    job's processes are those under `pids` (for stacks on a stall); the final diagnosis is the live one,
    which equals the batch diagnosis of the same bytes."""
    stop = stop or threading.Event()
    watch = Watch(options, sink, lambda: ranks_on_machine(list(pids)))
    stream = watch.stream("-", None)
    ended = threading.Event()
    failure: list[BaseException] = []

    def read() -> None:
        try:
            read1 = getattr(source, "read1", source.read)
            while not stop.is_set():
                data = read1(job_mod.READ_BYTES)
                if not data:
                    break
                stream.write(data)
        except Exception as exc:  # a broken input ends the watch, with what was read so far
            failure.append(exc)
        finally:
            ended.set()

    reader = threading.Thread(target=read, name="rootrank-input", daemon=True)
    reader.start()
    interrupted = False
    try:
        while not ended.wait(TICK) and not stop.is_set():
            watch.tick(alive=True)
    except KeyboardInterrupt:
        interrupted = True
    stop.set()
    reader.join(TICK)
    final = watch.finish([stream], None, "interrupted" if interrupted else "done")
    error = failure[0] if failure else stream.live.error
    return Outcome(None, final, interrupted, watch, error)
