"""`rootrank watch` on a terminal: the notices on stderr, between the job's lines, and a status file
for an editor when ROOTRANK_WATCH_STATUS_DIR is set (the VS Code extension sets it in its terminals)."""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path

from rootrank.model import Diagnosis, plain
from rootrank.render import watch as render
from rootrank.watch import WatchOptions, follow_paths, run_command, watch_input
from rootrank.watch import job as job_mod
from rootrank.watch.records import StallReport, WatchStatus

EXIT_ERROR = 2
STATUS_DIR = "ROOTRANK_WATCH_STATUS_DIR"


class TerminalSink:
    """Writes notices to stderr, each on a line of its own even while the job is mid-line."""

    def __init__(self, color: bool, kill_on_stall: bool, command: list[str]) -> None:
        self.color = color
        self.kill_on_stall = kill_on_stall
        self.lock: threading.Lock = threading.Lock()
        self.pump: job_mod.Pump | None = None
        self.command = command
        status_dir = os.environ.get(STATUS_DIR)
        self.status_path = Path(status_dir) / f"{os.getpid()}.json" if status_dir else None

    def attach(self, _job: job_mod.Job, lock: threading.Lock, pump: job_mod.Pump) -> None:
        self.lock, self.pump = lock, pump

    def write(self, text: str) -> None:
        with self.lock:
            fresh_line = self.pump is None or self.pump.ended_with_newline
            try:
                sys.stdout.flush()
                sys.stderr.write(("" if fresh_line else "\n") + text)
                sys.stderr.flush()
            except (BrokenPipeError, ValueError):
                pass
            if self.pump is not None:
                self.pump.ended_with_newline = True

    def cause(self, diagnosis: Diagnosis) -> None:
        self.write(render.cause_notice(diagnosis, self.color))

    def stall(self, report: StallReport) -> None:
        self.write(render.stall_notice(report, self.kill_on_stall, self.color))

    def status(self, status: WatchStatus) -> None:
        if self.status_path is None:
            return
        data = {"schema": "rootrank.watch-status/1", "pid": os.getpid(), "command": self.command,
                "cwd": os.getcwd(), "updated": time.time(), **plain(status)}
        try:
            self.status_path.parent.mkdir(parents=True, exist_ok=True)
            temporary = self.status_path.with_suffix(".tmp")
            temporary.write_text(json.dumps(data), encoding="utf-8")
            temporary.replace(self.status_path)  # a reader never sees half a file
        except OSError:
            pass


def run(args: argparse.Namespace) -> int:
    job: list[str] | None = args.job
    paths = list(args.paths)
    if job is not None:
        paths = paths[: len(paths) - len(job)] if len(job) <= len(paths) else []
    if job is not None and not job:
        print("rootrank: watch: no command after --", file=sys.stderr)
        return EXIT_ERROR
    if job is None and not paths:
        print("rootrank: watch: give a command (rootrank watch -- CMD ...) or log files to follow", file=sys.stderr)
        return EXIT_ERROR
    if job is not None and paths:
        print("rootrank: watch: give either a command after -- or log files, not both", file=sys.stderr)
        return EXIT_ERROR
    if args.stall is not None and args.stall <= 0:
        print("rootrank: watch: --stall must be a positive number of seconds", file=sys.stderr)
        return EXIT_ERROR
    from_input = paths == ["-"]
    for path in [] if from_input else paths:
        if not Path(path).exists() and not Path(path).parent.is_dir():
            print(f"rootrank: {path}: no such file or folder", file=sys.stderr)
            return EXIT_ERROR
    color = args.color == "always" or (args.color == "auto" and sys.stderr.isatty() and "NO_COLOR" not in os.environ)
    options = WatchOptions(stall=args.stall, kill_on_stall=args.kill_on_stall,
                           out_dir=Path(args.out) if args.out else None, log=Path(args.log) if args.log else None)
    sink = TerminalSink(color, args.kill_on_stall, job or ([args.label] if from_input and args.label else paths))
    if job is not None:
        try:
            outcome = run_command(job, options, sink, on_started=sink.attach)
        except OSError as exc:
            print(f"rootrank: cannot run {job[0]}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
    elif from_input:
        outcome = watch_input(sys.stdin.buffer, options, sink, args.pid)
    else:
        if sys.stderr.isatty():
            print(f"rootrank: following {', '.join(paths)} (Ctrl-C to stop)", file=sys.stderr)
        echo = _echo if args.echo else None
        outcome = follow_paths(paths, options, sink, args.pid, echo=echo)
    if outcome.error is not None:
        print(f"rootrank: internal error while watching: {type(outcome.error).__name__}: {outcome.error} "
              "(the job's output passed through)", file=sys.stderr)
    final = outcome.diagnosis
    quiet = (outcome.exit_code in (0, None) and not outcome.interrupted and not outcome.watch.stalls
             and (final is None or not final.failed))
    if final is not None and not quiet:
        from rootrank.render.json import diagnosis_to_json

        report = outcome.watch.write_report("report.json", json.dumps(diagnosis_to_json(final), indent=2) + "\n")
        sink.write(render.final_notice(final, outcome.exit_code, outcome.interrupted, outcome.watch.stalls, color) + f"report: {report}\n")
    if outcome.exit_code is not None:
        return outcome.exit_code
    return 1 if final is not None and final.failed else 0


def _echo(_path: Path, data: bytes) -> None:
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
