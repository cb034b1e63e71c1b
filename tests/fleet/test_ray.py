"""`scan --ray` and `diagnose --ray` on a real local Ray cluster (two worker processes, started here
once for the module): the same rows and the same diagnosis as the local paths, bit for bit, and a
worker killed during a scan loses no run."""

from __future__ import annotations

import os
import signal
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from rootrank.diagnose import diagnose_paths
from rootrank.fleet import scan
from rootrank.fleet.jsonl import render_jsonl
from rootrank.render.json import diagnosis_to_json
from tests.conftest import REPO
from tests.fleet.conftest import Fleet
from tests.heavy import require_module

sys.path.insert(0, str(REPO / "bench"))


@pytest.fixture(scope="module")
def cluster() -> Iterator[Any]:
    ray = require_module("ray")
    for attempt in (1, 2):
        try:
            ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, object_store_memory=100 << 20)
            break
        except Exception:
            # Ray waits 30 s, hard-coded, for its own processes to register: a loaded machine can miss it.
            ray.shutdown()
            if attempt == 2:
                raise
    try:
        yield ray
    finally:
        ray.shutdown()


def _scan_workers() -> list[int]:
    """Pids of this machine's Ray worker processes running the scan task (their title says so)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                title = handle.read().split(b"\0")[0]
        except OSError:
            continue
        if title.startswith(b"ray::_scan_task"):
            found.append(int(entry))
    return found


def test_scan_on_ray_gives_the_local_rows_with_a_worker_killed(cluster: Any, fleet: Fleet) -> None:
    # One scan for both claims (a cluster's scan costs tens of seconds in CI): a worker is killed
    # while it runs a task, and the rows are still exactly the local ones.
    killed: list[int] = []

    def kill_one(done: int, total: int) -> None:
        if not killed and done >= 10:
            workers = _scan_workers()
            if workers:
                os.kill(workers[0], signal.SIGKILL)
                killed.append(workers[0])

    on_ray = scan(str(fleet.root), ray="", cache=None, on_progress=kill_one)
    assert killed, "no Ray worker was running the scan task"
    assert render_jsonl(on_ray.rows) == render_jsonl(fleet.local.rows)


def _same_diagnosis(paths: list[str], segment_bytes: int) -> int:
    from rootrank.fleet.splitray import diagnose_on_ray

    local = diagnosis_to_json(diagnose_paths(paths))
    remote, tasks = diagnose_on_ray(paths, "", segment_bytes=segment_bytes)
    assert diagnosis_to_json(remote) == local
    assert local["root_cause"] is not None
    return tasks


def test_diagnose_on_ray_per_rank_files(cluster: Any, tmp_path: Path) -> None:
    import bench_diagnose
    import gen_log

    log = tmp_path / "job.log"
    with open(log, "wb") as out:
        gen_log.generate(out, 6 << 20, 1024, "rank", 523, 5)
    files = tmp_path / "ranks"
    assert bench_diagnose.split_per_rank(log, files) == 1025
    # Every per-rank file is smaller than one chunk: the driver reads them all, no task is needed.
    assert _same_diagnosis([str(files)], 1 << 20) == 0


def test_diagnose_on_ray_big_files_per_byte_range(cluster: Any, tmp_path: Path) -> None:
    import bench_fleet
    import gen_log

    log = tmp_path / "job.log"
    with open(log, "wb") as out:
        gen_log.generate(out, 24 << 20, 16, "pdsh", 3, 11)
    nodes = tmp_path / "nodes"
    assert bench_fleet.split_per_host(log, nodes) == 2  # two 12 MB per-node logs
    assert _same_diagnosis([str(nodes)], 1 << 20) >= 6
    assert _same_diagnosis([str(log)], 1 << 20) >= 14
