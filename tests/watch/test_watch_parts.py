"""The watch's parts on their own: the rhythm and its stall threshold, reading py-spy's dump and naming
the odd rank out, finding the ranks of a job among real processes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

from rootrank.watch.ranks import ranks_of_job
from rootrank.watch.records import Frame, RankProcess
from rootrank.watch.rhythm import MIN_STALL, Rhythm
from rootrank.watch.stacks import odd_ones_out, parse_dump, stack_of, verdict


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def test_the_rhythm_is_learnt_from_progress_lines_and_a_stall_is_five_times_it() -> None:
    clock = Clock()
    rhythm = Rhythm(clock=clock)
    for step in range(10):
        clock.now = step * 20.0
        rhythm.observe(b"[rank0]: step %d loss 0.5\n[rank1]: step %d loss 0.5\n" % (step, step))
        rhythm.observe(b"just a line without progress\n")
    assert rhythm.interval == 20.0 and rhythm.threshold == 100.0
    assert rhythm.step == 9 and rhythm.ranks == {0, 1}
    clock.now = 180.0 + 99
    assert rhythm.stalled() is None
    clock.now = 180.0 + 101
    assert rhythm.stalled() == 101
    assert "no rank progressed for 101 s" in rhythm.describe()


def test_a_fast_rhythm_still_waits_the_minimum_and_a_set_threshold_wins() -> None:
    clock = Clock()
    fast = Rhythm(clock=clock)
    for i in range(20):
        clock.now = i * 0.5
        fast.observe(b"  40%%|####      | %d/50 [00:02<00:03, 12.1it/s]\r" % i)
    assert fast.threshold == MIN_STALL
    fixed = Rhythm(stall=2, clock=clock)
    clock.now = 30.0
    assert fixed.stalled() is None  # before any progress line, start-up gets MIN_STALL
    fixed.observe(b"iter: 3\n")
    clock.now = 32.5
    assert fixed.stalled() == 2.5


DUMP = """Process 4242: /usr/bin/python3 -u train.py
Python v3.11.7 (/usr/bin/python3.11)

Thread 4242 (idle): "MainThread"
    all_reduce (torch/distributed/distributed_c10d.py:3252)
    wrapper (torch/distributed/c10d_logger.py:83)
    main (train.py:27)
    <module> (train.py:34)
Thread 4250 (idle): "Thread-1 (_pin_memory_loop)"
    wait (threading.py:331)
"""


def test_a_py_spy_dump_is_read_and_its_place_found() -> None:
    threads = parse_dump(DUMP)
    assert [name for name, _ in threads] == ["MainThread", "Thread-1 (_pin_memory_loop)"]
    stack = stack_of(RankProcess(4242, 0), threads)
    assert stack.collective == "all_reduce"
    assert stack.user_frame == Frame("main", "train.py", 27)


def _stack(rank: int, frames: list[tuple[str, str, int]]) -> object:
    return stack_of(RankProcess(1000 + rank, rank), [("MainThread", tuple(Frame(*f) for f in frames))])


WAIT = [("all_reduce", "torch/distributed/distributed_c10d.py", 3252), ("main", "train.py", 27)]
SLEEP = [("train_step", "train.py", 15), ("main", "train.py", 25)]


def test_the_odd_one_out_is_the_rank_not_in_the_collective() -> None:
    stacks = [_stack(0, WAIT), _stack(1, SLEEP), _stack(2, WAIT), _stack(3, WAIT)]
    odd, waiting, where = odd_ones_out(stacks)  # type: ignore[arg-type]
    assert [s.process.rank for s in odd] == [1]
    assert [s.process.rank for s in waiting] == [0, 2, 3]
    assert where == "all_reduce at train.py:27"
    assert verdict(odd, waiting, where) == ("rank 1 is not in the collective: it is at train.py:15 in train_step; "
                                            "rank(s) 0, 2, 3 wait in all_reduce at train.py:27")
    # Two ranks: the one in the collective waits, whatever the count.
    odd, waiting, _ = odd_ones_out([_stack(0, SLEEP), _stack(1, WAIT)])  # type: ignore[arg-type]
    assert [s.process.rank for s in odd] == [0]


def test_when_every_local_rank_waits_the_hung_one_is_elsewhere() -> None:
    odd, waiting, where = odd_ones_out([_stack(0, WAIT), _stack(1, WAIT)])  # type: ignore[arg-type]
    assert not odd and len(waiting) == 2
    assert "not among the processes on this machine" in verdict(odd, waiting, where)


def test_ranks_are_read_from_the_processes_environment_and_their_children_left_out() -> None:
    code = ("import os, subprocess, sys, time\n"
            "kids = []\n"
            "for r in (1, 0):\n"
            "    env = dict(os.environ, RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE='2')\n"
            "    kids.append(subprocess.Popen([sys.executable, '-c', 'import subprocess, sys, time; "
            "w = subprocess.Popen([sys.executable, \"-c\", \"import time; time.sleep(30)\"]); time.sleep(30)'], env=env))\n"
            "print('up', flush=True)\n"
            "time.sleep(30)\n")
    launcher = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, start_new_session=True)
    try:
        assert launcher.stdout is not None and launcher.stdout.readline() == b"up\n"
        time.sleep(1.0)  # the workers' own children (a data loader, say) start too
        ranks = ranks_of_job(launcher.pid)
    finally:
        os.killpg(launcher.pid, signal.SIGKILL)  # the launcher's session: it and every process it started
        launcher.wait()
    assert [r.rank for r in ranks] == [0, 1]
    assert all(r.local_rank == r.rank for r in ranks)


def test_a_single_process_is_where_it_is() -> None:
    odd, waiting, where = odd_ones_out([_stack(0, SLEEP)])  # type: ignore[arg-type]
    assert verdict(odd, waiting, where) == "rank 0 is at train.py:15 in train_step"


def test_a_dump_of_a_process_without_thread_names() -> None:
    # py-spy 0.4.2 on a script that never imported threading (seen on tests/vscode/workspace/stall.py)
    dump = ("Process 2171: /usr/bin/python stall.py\nPython v3.11.7 (/usr/bin/python3.11)\n\n"
            "Thread 2171 (idle)\n    <module> (stall.py:7)\n")
    [(name, frames)] = parse_dump(dump)
    assert name == "" and frames == (Frame("<module>", "stall.py", 7),)
