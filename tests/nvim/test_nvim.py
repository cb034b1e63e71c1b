"""Runs tests/nvim/e2e.lua in headless Neovim (Debian's 0.7 or newer) when `nvim` is on PATH."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

HERE = Path(__file__).resolve().parent
LOG = HERE.parents[0] / "fixtures" / "logs" / "process.uncaught-exception--rank2-valueerror-step3-no-record"
TRAIN = """\
import torch
from torch.utils.checkpoint import checkpoint


def forward(blocks, x):
    for block in blocks:
        x = checkpoint(block, x)
    return x
"""


@pytest.mark.skipif(shutil.which("nvim") is None, reason="nvim is not installed (apt-get install -y neovim)")
def test_neovim_end_to_end(tmp_path: Path):
    (tmp_path / "train.py").write_text(TRAIN)
    env = {**os.environ, "RR_PY": sys.executable}
    if (LOG / "log.txt").is_file():
        env["RR_LOG"] = str(LOG / "log.txt")
        env["RR_LOG_DOC"] = str(tmp_path / "run.log")
        shutil.copy(LOG / "log.txt", tmp_path / "run.log")
        env["RR_RANK"] = str(yaml.safe_load((LOG / "expect.yaml").read_text())["initiating_rank"])
    run = subprocess.run(["nvim", "--headless", "--clean", "-c", f"luafile {HERE / 'e2e.lua'}", "train.py"],
                         cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120, check=False)
    output = run.stdout + run.stderr
    summary = re.search(r"nvim-e2e: (\d+) passed, (\d+) failed", output)
    assert summary, output
    assert summary.group(2) == "0" and run.returncode == 0, output
    assert int(summary.group(1)) >= (7 if "RR_LOG" in env else 5), output
