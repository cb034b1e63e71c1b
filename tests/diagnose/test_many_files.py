"""Thousands of per-rank files of one job: one file open at a time, memory that does not grow with the
number of files, and the same initiating rank as the interleaved log of the same run."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

RANKS = 1200
FAILING = 777

SCRIPT = textwrap.dedent("""
    import json, resource, sys
    resource.setrlimit(resource.RLIMIT_NOFILE, (40, 40))
    from rootrank.diagnose import diagnose_paths
    from rootrank.render.json import diagnosis_to_json
    d = diagnosis_to_json(diagnose_paths([sys.argv[1]]))
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"rank": d["root_cause"]["rank"], "rule": d["root_cause"]["rule"],
                      "sources": len(d["sources"]), "collateral": d["collateral_count"], "rss_kib": rss}))
""")


def _write_job(root: Path, ranks: int) -> None:
    for rank in range(ranks):
        lines = [f"step {step} loss {2.0 - step / 100:.3f}" for step in range(20)]
        if rank == FAILING:
            lines += ["Traceback (most recent call last):",
                      '  File "/home/user/train.py", line 41, in <module>',
                      "    main()",
                      "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
                      "capacity of 79.11 GiB of which 1.02 GiB is free."]
        else:
            lines += [f"[rank{rank}]:[E1129 21:13:16.069170525 ProcessGroupNCCL.cpp:1515] [PG ID 0 PG GUID 0(default_pg) "
                      f"Rank {rank}] Process group watchdog thread terminated with exception: [Rank {rank}] Watchdog "
                      "caught collective operation timeout: WorkNCCL(SeqNum=19, OpType=ALLREDUCE, NumelIn=2, "
                      "NumelOut=2, Timeout(ms)=600000) ran for 600067 milliseconds before timing out."]
        (root / f"rank{rank}.log").write_text("\n".join(lines) + "\n")


@pytest.mark.skipif(sys.platform == "win32", reason="RLIMIT_NOFILE is POSIX")
def test_thousands_of_per_rank_files_under_a_low_open_file_limit(tmp_path: Path) -> None:
    job = tmp_path / "logs"
    job.mkdir()
    _write_job(job, RANKS)
    # 40 open files in all, interpreter included: more than one log open at a time would fail
    done = subprocess.run([sys.executable, "-c", SCRIPT, str(job)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["sources"] == RANKS
    assert (result["rule"], result["rank"]) == ("memory.cuda-oom", FAILING)
    assert result["collateral"] == RANKS - 1
