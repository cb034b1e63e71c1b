"""Watchdog and elastic-agent lines as torch 2.1-2.6 print them, read as 2.13's are.

Every line is copied from a real public log (found with find_string; the version each one comes from
is recorded beside it, from the log's own traceback or its header format). The watchdog's nested
`... watchdog thread terminated with exception: [Rank R] Watchdog caught ...` names the rank inside
the line's process group: for a sub-group (PG N, N > 0) no rank may be taken from it.
"""

from __future__ import annotations

import pytest

from rootrank.diagnose import Pipeline, diagnose_text, match_pasted
from rootrank.diagnose.formats.prefixes import peel

PIPELINE = Pipeline()
CASES = [
    # torch 2.2-era header ("[rankN]:[E ProcessGroupNCCL.cpp:N]", conda build pytorch_1704987288773).
    ("slurm0-a3-ghpc-8: [rank17]:[E ProcessGroupNCCL.cpp:1182] [Rank 2] NCCL watchdog thread terminated with "
     "exception: [Rank 2] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=4, OpType=ALLREDUCE, "
     "NumelIn=9437184, NumelOut=9437184, Timeout(ms)=600000) ran for 600070 milliseconds before timing out.",
     "distributed.collective-timeout", "2"),
    # torch 2.3-era "[PG 1 Rank 1]" (sub-group 1).
    ("[rank1]:[E ProcessGroupNCCL.cpp:1385] [PG 1 Rank 1] NCCL watchdog thread terminated with exception: [Rank 1] "
     "Watchdog caught collective operation timeout: WorkNCCL(SeqNum=7, OpType=_ALLGATHER_BASE, NumelIn=1024, "
     "NumelOut=16384, Timeout(ms)=600000) ran for 600029 milliseconds before timing out.",
     "distributed.collective-timeout", None),
    # torch >= 2.6 (the same run prints "failure detected by watchdog at work sequence id"), default group.
    ("[rank0]:[E709 17:05:39.083402482 ProcessGroupNCCL.cpp:1899] [PG ID 0 PG GUID 0(default_pg) Rank 0] Process "
     "group watchdog thread terminated with exception: [Rank 0] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=20585, OpType=ALLREDUCE, NumelIn=1259621, NumelOut=1259621, Timeout(ms)=600000) ran for "
     "600000 milliseconds before timing out.", "distributed.collective-timeout", "0"),
    # The same, sub-group PG ID 4: its "[Rank 1]" is not global rank 1 (the prefix says rank 9).
    ("[rank9]:[E318 08:49:08.969150748 ProcessGroupNCCL.cpp:2057] [PG ID 4 PG GUID 45 Rank 1] Process group "
     "watchdog thread terminated with exception: [Rank 1] Watchdog caught collective operation timeout: "
     "WorkNCCL(SeqNum=2, OpType=_REDUCE_SCATTER_BASE, NumelIn=1179648, NumelOut=589824, Timeout(ms)=600000) ran "
     "for 600001 milliseconds before timing out.", "distributed.collective-timeout", None),
    # torch 2.1.0 (the log's traceback: load_entry_point('torch==2.1.0', ...)).
    ("[2025-08-14 22:41:30,275] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: -6) "
     "local_rank: 0 (pid: 1675255) of binary: /home/rtx3090/miniconda3/envs/loro_2by4/bin/python",
     "distributed.child-failed", None),
    ("[E ProcessGroupNCCL.cpp:915] [Rank 0] NCCL watchdog thread terminated with exception: CUDA error: an illegal "
     "memory access was encountered", "hardware.cuda-kernel-fault", None),
    # torch 2.2.2 (load_entry_point('torch==2.2.2', ...)).
    ("[2025-07-29 17:40:22,639] torch.distributed.elastic.multiprocessing.api: [ERROR] failed (exitcode: 1) "
     "local_rank: 0 (pid: 87930) of binary: /home/pai/envs/far/bin/python", "distributed.child-failed", None),
    # 2.1-2.3's "[time] logger: [LEVEL]" format (the log's NCCL is 2.18.5; its torch version is not printed).
    ("[2025-10-14 12:04:49,079] torch.distributed.elastic.multiprocessing.api: [WARNING] Sending process 223646 "
     "closing signal SIGTERM", "distributed.child-failed", None),
]


@pytest.mark.parametrize(("line", "entry", "rank"), CASES, ids=[f"{c[1]}-{i}" for i, c in enumerate(CASES)])
def test_old_wording_matches_with_the_right_rank(line: str, entry: str, rank: str | None) -> None:
    text = peel(line, frozenset()).text
    found = {p.entry_id: fields for p, fields in match_pasted(PIPELINE.matcher.match, text)}
    assert entry in found, sorted(found)
    assert found[entry].get("rank") == rank


def test_sub_group_watchdog_line_takes_the_global_rank_of_its_prefix() -> None:
    root = diagnose_text(CASES[3][0] + "\n").root_cause
    assert root is not None and root.rule in {"distributed.collective-timeout", "distributed.rank-stalled"}
    # The timeout is rank 9's (its prefix), never "rank 1" of the sub-group's numbering.
    assert root.rank != 1
    assert [e.rank for e in root.evidence] == [9]
