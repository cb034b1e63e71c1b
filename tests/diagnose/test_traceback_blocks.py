"""The traceback grouper says when a block can take no more lines (`on_close`), and holds a bounded table
of streams; the collector then turns a cascade's tracebacks into bits without changing the diagnosis."""

from __future__ import annotations

import pytest

from rootrank.diagnose import collect, diagnose_text, tracebacks
from rootrank.diagnose.tracebacks import MAX_STREAMS, TracebackGrouper
from rootrank.render.json import diagnosis_to_json

TRACEBACK = [
    "Traceback (most recent call last):",
    '  File "/job/train.py", line 41, in <module>',
    "    loss = step(batch)",
    "RuntimeError: boom",
]


def _feed(grouper: TracebackGrouper, stream: object, lines: list[str], start: int) -> list[int]:
    return [grouper.assign(stream, text, start + i) for i, text in enumerate(lines)]


def test_a_block_closes_when_its_stream_moves_on() -> None:
    closed: list[int] = []
    grouper = TracebackGrouper()
    grouper.on_close = closed.append
    blocks = _feed(grouper, "rank0", TRACEBACK, 1)
    assert len(set(blocks)) == 1 and blocks[0] and closed == []  # the message may still continue
    assert grouper.assign("rank0", "[2026-12-04 10:00:00] step 5", 30) == 0
    assert closed == [blocks[0]]
    again = _feed(grouper, "rank0", TRACEBACK, 40)
    _feed(grouper, "rank0", TRACEBACK, 50)  # a new traceback on the same stream ends the last one
    assert closed == [blocks[0], again[0]]


def test_a_chained_traceback_stays_one_block_until_it_ends() -> None:
    closed: list[int] = []
    grouper = TracebackGrouper()
    grouper.on_close = closed.append
    chained = [*TRACEBACK, "", "During handling of the above exception, another exception occurred:", "",
               *TRACEBACK]
    blocks = _feed(grouper, "s", chained, 1)
    assert len({b for b in blocks if b}) == 1 and closed == []
    grouper.assign("s", "INFO done", 100)
    assert closed == [blocks[0]]


def test_the_table_of_streams_is_bounded() -> None:
    closed: list[int] = []
    grouper = TracebackGrouper()
    grouper.on_close = closed.append
    for rank in range(3 * MAX_STREAMS):  # each rank ends its traceback and falls silent
        _feed(grouper, ("log", rank), TRACEBACK, 10 * rank)
    assert len(grouper._states) <= MAX_STREAMS + 1
    assert len(closed) >= 2 * MAX_STREAMS and len(set(closed)) == len(closed)


def test_streams_inside_their_frames_are_kept_and_cost_no_rescan() -> None:
    grouper = TracebackGrouper()
    for rank in range(2 * MAX_STREAMS):  # every traceback still open: nothing may be forgotten
        grouper.assign(("log", rank), TRACEBACK[0], rank)
    assert len(grouper._states) == 2 * MAX_STREAMS
    assert grouper._check_at >= 2 * MAX_STREAMS  # looked once, then not again until the table doubles


def _cascade(after: bool) -> str:
    """Rank 7's ValueError, then 299 ranks' timeout tracebacks; `after`: each rank then prints a record line
    (which closes its block at once); else the blocks close only when the table of streams overflows."""
    lines = ["[rank7]: Traceback (most recent call last):", '[rank7]:   File "/job/train.py", line 9, in <module>',
             "[rank7]:     x = load()", "[rank7]: ValueError: batch 3 has 0 rows"]
    for rank in range(300):
        if rank == 7:
            continue
        lines += [f"[rank{rank}]: Traceback (most recent call last):",
                  f'[rank{rank}]:   File "/job/train.py", line 50, in main',
                  f"[rank{rank}]:     loss.backward()",
                  f"[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/"
                  f"unbound_buffer.cc:78] Timed out waiting 10000ms for recv operation to complete"]
        if after:
            lines.append(f"[rank{rank}]: [2026-12-04 10:00:00] shutting down")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("after", [True, False])
def test_a_traceback_cascade_gives_the_diagnosis_it_gave_as_events(monkeypatch: pytest.MonkeyPatch,
                                                                    after: bool) -> None:
    """Past the first 64 ranks the blocks become bits; everything but the timeline (which lists the events
    kept) is what it was with every block an event."""
    monkeypatch.setattr(tracebacks, "MAX_STREAMS", 16)
    grouped = diagnosis_to_json(diagnose_text(_cascade(after)))
    monkeypatch.setattr(collect, "FULL_PER_SIGNATURE", 10**9)
    whole = diagnosis_to_json(diagnose_text(_cascade(after)))
    assert grouped["root_cause"]["rank"] == 7 and grouped["root_cause"]["rule"] == "process.uncaught-exception"
    assert grouped["collateral_count"] == 299 and grouped["ranks_seen"] == "0-299"
    assert [(g["rule"], g["ranks"]) for g in grouped["collateral_ranges"]] == [
        ("distributed.collective-timeout", "0-6,8-299")]
    assert len(grouped["timeline"]) < len(whole["timeline"])  # the grouped ranks' blocks are not events
    del grouped["timeline"], whole["timeline"]
    assert grouped == whole


def test_collateral_of_several_groups_keeps_each_groups_own_event() -> None:
    """The lowest collateral ranks come from every group with that group's event (a lazily bound event
    once gave every group the last one's), and by_rule/len/ranks see every rank once."""
    from rootrank.diagnose.initiator import CollateralRanks
    from rootrank.model import Event, LogLine, Role, Severity
    from rootrank.ranks import RankSet

    def event(rule: str, order: int) -> Event:
        return Event(rule, Role.SYMPTOM, Severity.ERROR, LogLine(order, rule, rule), order=order)

    timeout, lost = event("distributed.collective-timeout", 10), event("distributed.peer-lost", 20)
    own = event("process.uncaught-exception", 5)
    collateral = CollateralRanks({3: own}, [(RankSet(range(100, 200, 2)), timeout), (RankSet(range(101, 200, 2)), lost)])
    lowest = collateral.lowest(5)
    assert [(rank, e.rule) for rank, e in lowest] == [
        (3, own.rule), (100, timeout.rule), (101, lost.rule), (102, timeout.rule), (103, lost.rule)]
    assert len(collateral) == 101 and collateral.ranks() == {3, *range(100, 200)}
    assert {rule: ranks.text() for rule, (ranks, _) in collateral.by_rule.items()} == {
        own.rule: "3", timeout.rule: ",".join(str(r) for r in range(100, 200, 2)),
        lost.rule: ",".join(str(r) for r in range(101, 200, 2))}
    assert [e.rule for e in collateral.events()] == [own.rule, timeout.rule, lost.rule]


def test_a_paste_cut_after_the_header_is_one_block_from_its_first_frame() -> None:
    # The exception line comes first, the continuation that names the cause three lines later: one block,
    # named by its strongest entry (the paste began inside rank 0's traceback).
    lines = ['[rank0]:   File "/usr/lib/python3.11/site-packages/torch/distributed/distributed_c10d.py", line 4687, '
             "in barrier",
             "[rank0]:     work = group.barrier(opts=opts)",
             "[rank0]: torch.distributed.DistBackendError: NCCL error in: /pytorch/torch/csrc/distributed/c10d/"
             "NCCLUtils.cpp:77, unhandled cuda error (run with NCCL_DEBUG=INFO for details), NCCL version 2.25.1",
             "[rank0]: ncclUnhandledCudaError: Call to CUDA function failed.",
             "[rank0]: Last error:",
             "[rank0]: Cuda failure 802 'system not yet initialized'"]
    d = diagnose_text("\n".join(lines))
    assert d.root_cause is not None and d.root_cause.rule == "hardware.fabric-manager-not-running"


def test_an_exception_whose_message_is_on_the_lines_below_takes_their_entry() -> None:
    # https://github.com/Lightning-AI/pytorch-lightning/issues/16900: `RuntimeError: ` and the message
    # multiprocessing raises, indented as its source wrote it.
    log = ("RuntimeError: \n"
           "        An attempt has been made to start a new process before the\n"
           "        current process has finished its bootstrapping phase.\n")
    root = diagnose_text(log).root_cause
    assert root is not None
    assert root.rule == "process.spawn-main-guard"
