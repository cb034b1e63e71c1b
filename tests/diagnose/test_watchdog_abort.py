"""An abort after a collective timeout is the NCCL watchdog ending the process: the timeout is the
failure, not a crash of its own. An abort of a rank that reported no timeout stays a cause."""

from __future__ import annotations

from rootrank.diagnose import diagnose_text

# https://github.com/Lightning-AI/litgpt/issues/1832 (Slurm): the watchdog's C++ stack, then the shell's
# report of the aborted command; the timeout message itself scrolled away (paths shortened).
STACK_THEN_ABORT = """\
Exception raised from checkTimeout at ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:618 (most recent call first):
frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x96 (0x7fe0c139c446 in /home/u/.local/lib/python3.9/site-packages/torch/lib/libc10.so)
frame #1: c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, std::ratio<1l, 1000l> > >) + 0x282 (0x7fe0c26af772 in /home/u/.local/lib/python3.9/site-packages/torch/lib/libtorch_cuda.so)
frame #2: c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7fe0c26b6bb3 in /home/u/.local/lib/python3.9/site-packages/torch/lib/libtorch_cuda.so)
frame #3: c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7fe0c26b861d in /home/u/.local/lib/python3.9/site-packages/torch/lib/libtorch_cuda.so)

/data/u/pretrain_then_finetune.sh: line 184: 2324239 Aborted                 (core dumped) litgpt pretrain $model_name
"""

TIMEOUT = ("[rank{r}]:[E1204 10:00:0{r}.000000 12{r} ProcessGroupNCCL.cpp:632] [Rank {r}] Watchdog caught collective "
           "operation timeout: WorkNCCL(SeqNum=5, OpType=ALLREDUCE, NumelIn=4096, NumelOut=4096, Timeout(ms)=600000) "
           "ran for 600001 milliseconds before timing out.")
SIGNAL = "[rank{r}]:*** SIGABRT received at time=1733306400 on cpu 3 ***"


def test_the_watchdogs_stack_and_the_shells_abort_read_as_the_timeout() -> None:
    root = diagnose_text(STACK_THEN_ABORT).root_cause
    assert root is not None
    assert root.rule == "distributed.collective-timeout"
    assert root.evidence[0].text.startswith("Exception raised from checkTimeout")


def test_an_abort_of_a_rank_that_timed_out_is_no_cause() -> None:
    log = "\n".join([TIMEOUT.format(r=0), TIMEOUT.format(r=1), SIGNAL.format(r=1)]) + "\n"
    root = diagnose_text(log).root_cause
    assert root is not None
    assert root.rule != "process.killed-signal"


def test_an_abort_of_a_rank_without_a_timeout_stays_the_cause() -> None:
    log = "\n".join([SIGNAL.format(r=2), TIMEOUT.format(r=0), TIMEOUT.format(r=1)]) + "\n"
    root = diagnose_text(log).root_cause
    assert root is not None
    assert (root.rule, root.rank) == ("process.killed-signal", 2)
