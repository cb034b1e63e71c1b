"""A file name gives a rank only when it says rank: a real single-process failure saved as `job-0038.log`
(a job id) or `slurm-4000123_7.out` (an array task) is no rank's, while the same log as `rank38.log` is
rank 38's; `rootrank diagnose` and `rootrank scan` agree on each."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

# A real CUDA OOM of one process, without rank prefixes: only the file name can give it a rank.
OOM = Path(__file__).parents[1] / "fixtures" / "logs" / "memory.cuda-oom--pasted-backticks-windows-issue" / "log.txt"


def _rootrank(*args: str) -> str:
    done = subprocess.run([sys.executable, "-m", "rootrank", *args], capture_output=True, text=True, check=False,
                          timeout=120)
    assert done.returncode in (0, 1), done.stderr
    return done.stdout


@pytest.mark.parametrize(("name", "rank"), [("job-0038.log", None), ("slurm-4000123_7.out", None),
                                            ("train_7.out", None), ("rank38.log", 38), ("train.rank-38.log", 38)])
def test_diagnose_and_scan_take_a_rank_from_a_name_only_when_it_says_rank(tmp_path: Path, name: str,
                                                                          rank: int | None) -> None:
    runs = tmp_path / "runs"
    runs.mkdir()
    log = runs / name
    shutil.copy(OOM, log)
    diagnosed = json.loads(_rootrank("diagnose", str(log), "--format", "json"))["root_cause"]
    assert diagnosed["rule"] == "memory.cuda-oom"
    assert diagnosed["rank"] == rank
    (row,) = [json.loads(line) for line in _rootrank("scan", str(runs), "--format", "jsonl").splitlines()
              if line.strip() and json.loads(line).get("run") == name]
    assert (row["rule"], row["rank"]) == ("memory.cuda-oom", rank)
