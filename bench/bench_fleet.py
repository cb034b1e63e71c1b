#!/usr/bin/env python3
"""Speed of `rootrank scan` and `rootrank diagnose --ray`: local against a local Ray cluster.

    python bench/bench_fleet.py [--runs 200] [--workers 2] [--huge 256MiB]

1. A generated fleet (gen_fleet.py) is scanned on this machine's cores and on a Ray cluster of
   `--workers` worker processes started here: runs/s and MB/s of each, and the Ray per-task overhead,
   measured as the time of a batch of empty tasks on the same cluster, from which the scaling to
   more workers is projected (the scan is per run, no shared state: time = runs x (per-run work /
   workers + per-task overhead / workers), bounded below by the driver's own per-task cost).
   Local and Ray passes alternate after the files were read once, best of two each.
2. One huge job: a `--huge` log of gen_log.py split per node, diagnosed locally and with --ray; the
   ratio of the two and the tasks used.
Every figure is a ratio against a reference measured in the same run; nothing is timed in a test.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import BinaryIO

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "server"))

HOST = re.compile(rb"^([\w.-]+): ")


def split_per_host(log: Path, directory: Path) -> int:
    """Move each `host: ` line (pdsh prefix kept) of `log` to `directory/<host>.log`, the others to
    launcher.log (as a per-node log collector leaves them); returns the number of files."""
    directory.mkdir(parents=True, exist_ok=True)
    handles: dict[str, BinaryIO] = {}
    try:
        with open(log, "rb") as source:
            for line in source:
                m = HOST.match(line)
                name = f"{m[1].decode()}.log" if m else "launcher.log"
                handle = handles.get(name)
                if handle is None:
                    handle = handles[name] = open(directory / name, "wb")  # noqa: SIM115
                handle.write(line)
    finally:
        for handle in handles.values():
            handle.close()
    return len(handles)


ROUNDS = 2


def _warm(root: Path) -> None:
    """Read every file once, so that the first timed pass does not pay for the disk alone."""
    for path in sorted(root.rglob("*")):
        if path.is_file():
            with open(path, "rb") as handle:
                while handle.read(1 << 24):
                    pass


def _timed(fn):  # type: ignore[no-untyped-def]
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    import gen_fleet
    import gen_log

    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", default=str(HERE / "out" / "fleet-bench"))
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--huge", type=gen_log.parse_size, default=gen_log.parse_size("256MiB"))
    ap.add_argument("--json", help="also write the figures to this file")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    try:
        import ray
    except ImportError:
        print("(skipped: Ray is not installed; pip install 'rootrank[ray]')")
        return 0

    from rootrank.diagnose import diagnose_paths
    from rootrank.fleet import scan
    from rootrank.fleet.jsonl import render_jsonl
    from rootrank.fleet.splitray import diagnose_on_ray
    from rootrank.render.json import diagnosis_to_json

    root = out / "runs"
    gen_fleet.generate(root, runs=args.runs)
    total = sum(p.stat().st_size for p in root.rglob("*") if p.is_file())
    _warm(root)
    _, started_s = _timed(lambda: ray.init(num_cpus=args.workers, include_dashboard=False, log_to_driver=False))
    # Alternated, best of ROUNDS each: neither side gets the page cache or a quieter minute the other lacked.
    local_s = ray_s = float("inf")
    for _ in range(ROUNDS):
        local, took = _timed(lambda: scan(str(root), cache=None))
        local_s = min(local_s, took)
        remote, took = _timed(lambda: scan(str(root), ray="", cache=None))
        ray_s = min(ray_s, took)
        assert render_jsonl(remote.rows) == render_jsonl(local.rows), "Ray rows differ from the local ones"

    @ray.remote(num_cpus=1)
    def nothing() -> None:
        return None

    ray.get([nothing.remote() for _ in range(args.workers * 4)])  # warm workers
    batch = 400
    _, empty_s = _timed(lambda: ray.get([nothing.remote() for _ in range(batch)]))
    overhead = empty_s / batch * args.workers  # seconds of one task's overhead on one worker
    per_run = ray_s * args.workers / args.runs  # worker-seconds per run, overhead included
    work = max(per_run - overhead, 1e-9)
    driver_bound = round(batch / empty_s, 1)  # tasks/s the driver can issue and collect at all
    # n workers finish n runs per (work + overhead) seconds, until the driver's own rate caps them.
    projected = {n: round(min(n / (work + overhead), driver_bound), 1) for n in (2, 8, 32, 128, 512)}

    huge = out / "huge.log"
    with open(huge, "wb") as handle:
        gen_log.generate(handle, args.huge, 64, "pdsh", 21, 3)
    nodes = out / "huge-nodes"
    split_per_host(huge, nodes)
    _warm(nodes)
    local_d_s = ray_d_s = float("inf")
    for _ in range(ROUNDS):
        local_d, took = _timed(lambda: diagnose_paths([str(nodes)]))
        local_d_s = min(local_d_s, took)
        (remote_d, tasks), took = _timed(lambda: diagnose_on_ray([str(nodes)], ""))
        ray_d_s = min(ray_d_s, took)
        assert diagnosis_to_json(remote_d) == diagnosis_to_json(local_d), "diagnose --ray differs from local"
    ray.shutdown()

    figures = {
        "runs": args.runs, "fleet_mb": round(total / 1e6, 1), "workers": args.workers,
        "scan_local_s": round(local_s, 2), "scan_local_runs_s": round(args.runs / local_s, 1),
        "scan_local_mb_s": round(total / 1e6 / local_s, 1),
        "ray_start_s": round(started_s, 1), "scan_ray_s": round(ray_s, 2),
        "scan_ray_runs_s": round(args.runs / ray_s, 1), "scan_ray_mb_s": round(total / 1e6 / ray_s, 1),
        "ray_task_overhead_ms": round(overhead * 1000, 2), "ray_driver_tasks_s": driver_bound,
        "projected_runs_s_by_workers": projected,
        "huge_mb": round(args.huge / 1e6, 1), "huge_files": len(list(nodes.iterdir())),
        "diagnose_local_s": round(local_d_s, 2), "diagnose_ray_s": round(ray_d_s, 2), "diagnose_ray_tasks": tasks,
        "diagnose_ray_vs_local": round(local_d_s / ray_d_s, 2),
    }
    f = figures
    print(f"fleet: {f['runs']} runs, {f['fleet_mb']} MB (bench/gen_fleet.py); Ray: {f['workers']} worker processes "
          f"on this machine (cluster start-up {f['ray_start_s']} s, not counted)")
    print(f"scan, local (all cores):   {f['scan_local_s']:7.2f} s  {f['scan_local_runs_s']:6.1f} runs/s  "
          f"{f['scan_local_mb_s']:6.1f} MB/s")
    print(f"scan, Ray ({f['workers']} workers):     {f['scan_ray_s']:7.2f} s  {f['scan_ray_runs_s']:6.1f} runs/s  "
          f"{f['scan_ray_mb_s']:6.1f} MB/s  ({f['scan_local_s'] / f['scan_ray_s']:.2f}x local; identical JSONL)")
    print(f"Ray per-task overhead:     {f['ray_task_overhead_ms']} ms per task per worker (400 empty tasks); the "
          f"driver issues and collects {f['ray_driver_tasks_s']} tasks/s at most")
    print(f"per run:                   {work * 1000:.0f} ms of work + {overhead * 1000:.1f} ms of task overhead "
          "(worker-seconds)")
    print("projected scan rate, runs/s by workers: " + ", ".join(f"{n}: {v}" for n, v in projected.items())
          + " (n / (work + overhead), capped by the driver)")
    print(f"diagnose, one {f['huge_mb']} MB 64-rank run in {f['huge_files']} per-node files: local "
          f"{f['diagnose_local_s']} s, --ray {f['diagnose_ray_s']} s ({f['diagnose_ray_vs_local']}x local), "
          f"{f['diagnose_ray_tasks']} tasks; same diagnosis")
    if args.json:
        Path(args.json).write_text(json.dumps(figures, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
