"""`rootrank watch` costs: how much slower a job printing as fast as it can runs under it, and how
long from a stall's start to the report naming the hung rank.

    python bench/bench_watch.py [--mib 200] [--stall 3]

1. Pass-through: a job writes N MiB of typical training lines (rank prefix, step, loss) to stdout as
   fast as it can, with stdout a pipe read by this script; wall time and throughput alone vs under
   `rootrank watch --`, best of 3 each, as a ratio in the same run. Then a job printing at a steady
   rate (10 MB/s by default, far above a training loop's): its own time alone and watched.
2. Stall to report: a 3-rank torchrun job (gloo, CPU) in which rank 1 sleeps while the others wait in
   all_reduce, watched with `--stall S`: the time from the job's last progress line to the report line
   ("hung: ...") minus S is the cost of taking every rank's stack with py-spy and naming the odd one.
   Skipped (said so) without torch or py-spy.

Timings are reported, never asserted.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
HANG = REPO / "tests" / "watch" / "jobs" / "hang_rank1.py"

FLOOD = """
import sys, time
began = time.perf_counter()
out = sys.stdout.buffer
lines = b"".join(b"[rank%d]: step %d | loss 0.%04d | lr 3.0e-04 | 41.2 samples/s\\n" % (i % 8, i, i % 9973)
                 for i in range(10000))
total = int(sys.argv[1]) << 20
sent = 0
while sent < total:
    out.write(lines)
    sent += len(lines)
out.flush()
sys.stderr.write("job %.3f\\n" % (time.perf_counter() - began))
"""

# A job printing at a steady rate (argv: MB/s, seconds), as a training loop does: a block of lines every
# 10 ms on a fixed schedule; its own time from first write to last is the schedule plus how far behind
# the writes fell.
PACED = """
import sys, time
out = sys.stdout.buffer
rate, seconds = float(sys.argv[1]), float(sys.argv[2])
line = b"[rank3]: step 1200 | loss 0.4217 | lr 3.0e-04 | 41.2 samples/s\\n"
block = line * max(1, int(rate * 1e6 / 100 / len(line)))
began = time.perf_counter()
for tick in range(int(seconds * 100)):
    delay = began + tick / 100 - time.perf_counter()
    if delay > 0:
        time.sleep(delay)
    out.write(block)
    out.flush()
sys.stderr.write("job %.3f\\n" % (time.perf_counter() - began))
"""


def _env() -> dict[str, str]:
    env = dict(os.environ)
    env["PATH"] = os.path.dirname(sys.executable) + os.pathsep + env.get("PATH", "")
    return env


def _drain(command: list[str]) -> tuple[float, int, float]:
    """(wall time to the end of the output, bytes, the job's own time from its first write to its last)."""
    start = time.perf_counter()
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=_env())
    assert process.stdout is not None and process.stderr is not None
    got = 0
    while True:
        data = process.stdout.read1(1 << 20)
        if not data:
            break
        got += len(data)
    wall = time.perf_counter() - start
    job = float(process.stderr.read().split()[1])
    process.wait()
    return wall, got, job


def pass_through(mib: int) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        flood = Path(tmp) / "flood.py"
        flood.write_text(FLOOD)
        job = [sys.executable, str(flood), str(mib)]
        alone = min(_drain(job) for _ in range(3))
        watched = min(_drain([sys.executable, "-m", "rootrank", "watch", "--", *job]) for _ in range(3))
    rows = [f"job printing {mib} MiB of training lines as fast as it can, stdout a pipe; best of 3",
            "  (job: its own time from first to last write; output: from start until the reader has every byte)",
            f"  alone:                job {alone[2]:6.2f} s {alone[1] / alone[2] / 1e6:7.1f} MB/s   "
            f"output {alone[0]:6.2f} s",
            f"  under rootrank watch: job {watched[2]:6.2f} s {watched[1] / watched[2] / 1e6:7.1f} MB/s   "
            f"output {watched[0]:6.2f} s   (job throughput {alone[2] / watched[2]:.2f}x alone's; output "
            f"{watched[0] / alone[0]:.2f}x the time)"]
    if watched[1] != alone[1]:
        rows.append(f"  BYTES DIFFER: {alone[1]} alone, {watched[1]} watched")
    return rows


def paced(rate: float, seconds: float) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        script = Path(tmp) / "paced.py"
        script.write_text(PACED)
        job = [sys.executable, str(script), str(rate), str(seconds)]
        alone = min(_drain(job) for _ in range(3))
        watched = min(_drain([sys.executable, "-m", "rootrank", "watch", "--", *job]) for _ in range(3))
    return [f"job printing {rate:g} MB/s for {seconds:g} s (a block of lines every 10 ms); best of 3",
            f"  alone:                job {alone[2]:6.2f} s   ({alone[1] / 1e6:.1f} MB)",
            f"  under rootrank watch: job {watched[2]:6.2f} s   ({watched[1] / 1e6:.1f} MB; "
            f"{watched[2] / alone[2]:.3f}x alone's time)"]


def stall_to_report(stall: float) -> list[str]:
    try:
        import torch  # noqa: F401
    except ImportError:
        return ["stall to report: skipped (torch is not installed)"]
    if not (shutil.which("py-spy") or shutil.which("py-spy", path=os.path.dirname(sys.executable))):
        return ["stall to report: skipped (py-spy is not installed: pip install 'rootrank[watch]')"]
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(HANG, Path(tmp) / "train.py")
        start = time.monotonic()
        process = subprocess.Popen([sys.executable, "-m", "rootrank", "watch", "--stall", str(stall), "--out", tmp,
                                    "--", sys.executable, "-m", "torch.distributed.run", "--nproc-per-node", "3",
                                    "train.py"], cwd=tmp, env=_env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
        assert process.stdout is not None
        last_step = reported = None
        hung = ""
        for line in iter(process.stdout.readline, b""):
            now = time.monotonic() - start
            if b" step " in line and b"rootrank" not in line:
                last_step = now
            if line.startswith(b"hung:"):
                reported, hung = now, line.decode().strip()
                break
        process.send_signal(2)
        process.communicate(timeout=120)
    if reported is None or last_step is None:
        return ["stall to report: no report came"]
    return [f"3-rank torchrun (gloo, CPU), rank 1 sleeps in its step; --stall {stall:g} s",
            f"  last progress line -> report: {reported - last_step:6.2f} s "
            f"(threshold {stall:g} s + {reported - last_step - stall:.2f} s to take 3 stacks and name the rank)",
            f"  {hung}"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mib", type=int, default=200)
    parser.add_argument("--stall", type=float, default=3.0)
    parser.add_argument("--paced-rate", type=float, default=10.0, help="MB/s of the steadily printing job")
    parser.add_argument("--paced-seconds", type=float, default=3.0)
    args = parser.parse_args()
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"rootrank watch benchmark (python {sys.version.split()[0]}, {os.cpu_count()} CPUs, load average {load:.2f})")
    for row in pass_through(args.mib) + paced(args.paced_rate, args.paced_seconds) + stall_to_report(args.stall):
        print(row)


if __name__ == "__main__":
    main()
