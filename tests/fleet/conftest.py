"""A generated fleet (bench/gen_fleet.py) and its local scan, shared by the fleet tests of a session."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from rootrank.fleet import Scan, scan
from tests.conftest import REPO

sys.path.insert(0, str(REPO / "bench"))
import gen_fleet

LEMON = gen_fleet.host_name(13)
BUSY = gen_fleet.host_name(5)


@dataclass(frozen=True)
class Fleet:
    root: Path
    truth: dict[str, dict[str, object]]
    local: Scan  # scanned on this machine, two processes, no cache


@pytest.fixture(scope="session")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Fleet:
    root = tmp_path_factory.mktemp("fleet") / "runs"
    truth = gen_fleet.generate(root, runs=200, lemon=13, lemon_jobs=40, lemon_failures=6, busy=5, busy_jobs=60)
    (root.parent / "truth.json").write_text(json.dumps(truth, indent=1, sort_keys=True))
    return Fleet(root, truth, scan(str(root), jobs=2, cache=None))


def run_key(name: str) -> str:
    """The truth's name of a run: single-file runs are named by their file."""
    return name.removesuffix(".out")
