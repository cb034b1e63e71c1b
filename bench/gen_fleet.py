#!/usr/bin/env python3
"""Deterministic generator of a fleet of runs for `rootrank scan`: logs of many jobs on a pool of
hosts, with planted failures and a planted "lemon" host.

    python bench/gen_fleet.py bench/out/fleet --runs 200 --truth bench/out/fleet-truth.json

Each generated job is a 16-rank, 2-node torchrun log written by gen_log.py (pdsh-style `host: `
prefixes, so the log names every rank's host), its node names replaced by the two hosts the job drew
from the pool. A job either ends in gen_log's planted failure on a chosen rank (a CUDA OOM, or for
some of the lemon's an uncorrectable ECC error in its place) or is cut before that tail (a clean
run). The lemon host runs in `--lemon-jobs` jobs and initiates the failure in `--lemon-failures` of
them; a busy host runs in more jobs (60) with no more failures than the rest: every job without the
lemon fails with probability `fail_share` on a random rank of either node. Real logs of
tests/fixtures/logs are mixed in as runs of their own (their hosts unnamed), and two runs cannot be
read (an empty folder, a folder without logs). Runs' mtimes are spread over six weeks. The truth
file records what was planted per run. The same options always give the same fleet.
"""

from __future__ import annotations

import argparse
import io
import json
import os
import random
import re
import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gen_log

HERE = Path(__file__).resolve().parent
FIXTURES = HERE.parent / "tests" / "fixtures" / "logs"
RANKS = 16
OOM_LINE = re.compile(rb"torch\.OutOfMemoryError: CUDA out of memory\.[^\n]*")
# torch before 2.8 raises CUDA errors as RuntimeError; the message is c10's "CUDA error: " + the
# runtime's cudaGetErrorString(cudaErrorECCUncorrectable).
ECC_LINE = b"RuntimeError: CUDA error: uncorrectable ECC error encountered"
NODE = re.compile(rb"node-(\d{3})")
EPOCH = 1_793_000_000  # 2026-10-26: the first run's mtime
SPAN_SECONDS = 6 * 7 * 86400


def host_name(index: int) -> str:
    return f"gpu-{index:03d}"


def job_log(seed: int, hosts: tuple[str, str], fail_rank: int | None, ecc: bool, size: int) -> bytes:
    """One job's log: gen_log's output with its nodes renamed; cut before the failure when clean."""
    out = io.BytesIO()
    # gen_log replays blocks of at least TEMPLATE_BYTES (256 KiB, for its GiB logs); a fleet's jobs are
    # small: smaller blocks let --size reach a few tens of KB.
    gen_log.TEMPLATE_BYTES = min(gen_log.TEMPLATE_BYTES, max(4096, size // 8))
    facts = gen_log.generate(out, size, RANKS, "pdsh", fail_rank if fail_rank is not None else 0, seed)
    data = out.getvalue()
    if fail_rank is None:
        data = data[: len(data) - facts["tail_bytes"]]
    elif ecc:
        data = OOM_LINE.sub(ECC_LINE, data, count=1)
    return NODE.sub(lambda m: hosts[int(m.group(1))].encode(), data)


def fixture_runs() -> list[tuple[str, Path, str | None, list[str]]]:
    """(name, log file or logs folder, expected family, other accepted entries) of the real logs."""
    import yaml

    found = []
    for case in sorted(FIXTURES.iterdir()):
        expect = case / "expect.yaml"
        log = case / "logs" if (case / "logs").is_dir() else case / "log.txt"
        if not expect.is_file() or not log.exists():
            continue
        expected = yaml.safe_load(expect.read_text())
        family = expected.get("family")
        found.append((case.name, log, None if family in (None, "none") else str(family),
                      [str(a) for a in expected.get("accept") or ()]))
    return found


def generate(root: Path, runs: int = 200, hosts: int = 24, lemon: int = 13, lemon_jobs: int = 40,
             lemon_failures: int = 6, busy: int = 5, busy_jobs: int = 60, fail_share: float = 0.12, fixtures: int = 20, size: int = 40_000,
             seed: int = 7) -> dict[str, dict[str, object]]:
    """Write the fleet under `root` (emptied first); returns the truth per run name."""
    rng = random.Random(seed)
    if root.exists():
        shutil.rmtree(root)
    root.mkdir(parents=True)
    truth: dict[str, dict[str, object]] = {}
    real = fixture_runs()[:fixtures]
    generated = runs - len(real) - 2
    lemon_slots = set(rng.sample(range(generated), lemon_jobs))
    lemon_failing = set(rng.sample(sorted(lemon_slots), lemon_failures))
    others = [h for h in range(hosts) if h != lemon]
    # A busy, healthy host: in more jobs than the lemon, failing only as often as any other.
    busy_slots = set(rng.sample(sorted(set(range(generated)) - lemon_slots), busy_jobs))
    others_not_busy = [h for h in others if h != busy]
    names = [f"job-{i:04d}" for i in range(runs)]
    rng.shuffle(names)
    name_iter = iter(names)
    for slot in range(generated):
        name = next(name_iter)
        if slot in lemon_slots:
            pair = [lemon, rng.choice(others)]
            rng.shuffle(pair)
        elif slot in busy_slots:
            pair = [busy, rng.choice(others_not_busy)]
            rng.shuffle(pair)
        else:
            pair = rng.sample(others_not_busy, 2)
        # The failing rank runs on either node: on the lemon's, wherever the lemon is in the pair.
        if slot in lemon_failing:
            fail_rank: int | None = (pair.index(lemon) * gen_log.RANKS_PER_HOST
                                     + rng.randrange(gen_log.RANKS_PER_HOST))
            ecc = len([s for s in lemon_failing if s <= slot]) % 2 == 1
        elif rng.random() < fail_share and slot not in lemon_slots:
            fail_rank, ecc = rng.randrange(RANKS), False
        else:
            fail_rank, ecc = None, False
        job_hosts = (host_name(pair[0]), host_name(pair[1]))
        # A quarter of the jobs are a Slurm output file each, the rest a folder holding the job's console log.
        if slot % 4 == 0:
            name = f"slurm-{4_000_000 + slot}"
            path = root / f"{name}.out"
        else:
            path = root / name / "console.log"
            path.parent.mkdir()
        path.write_bytes(job_log(seed * 1000 + slot, job_hosts, fail_rank, ecc, size))
        truth[name] = {
            "rule": None if fail_rank is None else "hardware.xid-memory-ecc" if ecc else "memory.cuda-oom",
            "rank": fail_rank,
            "host": None if fail_rank is None else job_hosts[fail_rank // gen_log.RANKS_PER_HOST],
            "hosts": sorted(job_hosts)}
    for case, log, family, accept in real:
        name = next(name_iter)
        if log.is_dir():
            shutil.copytree(log, root / name / "logs")
        else:
            (root / name).mkdir()
            shutil.copyfile(log, root / name / "log.txt")
        truth[name] = {"rule": family, "accept": accept, "fixture": case}
    empty = next(name_iter)
    (root / empty).mkdir()
    truth[empty] = {"unreadable": True}
    no_logs = next(name_iter)
    (root / no_logs).mkdir()
    (root / no_logs / "core.bin").write_bytes(b"\0" * 64)
    truth[no_logs] = {"unreadable": True}
    for index, name in enumerate(sorted(truth)):
        stamp = EPOCH + SPAN_SECONDS * index // len(truth)
        top = root / name if (root / name).exists() else root / f"{name}.out"
        for entry in [top, *sorted(top.rglob("*"))] if top.is_dir() else [top]:
            os.utime(entry, (stamp, stamp))
    return truth


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("root", help="folder to write the runs into (emptied first)")
    ap.add_argument("--runs", type=int, default=200)
    ap.add_argument("--size", type=gen_log.parse_size, default=gen_log.parse_size("40KB"),
                    help="target size of each generated job's log (default 40KB)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--truth", help="write what was planted, per run, as JSON to this file")
    args = ap.parse_args(argv)
    truth = generate(Path(args.root), runs=args.runs, size=args.size, seed=args.seed)
    if args.truth:
        Path(args.truth).write_text(json.dumps(truth, indent=1, sort_keys=True))
    failing = sum(1 for t in truth.values() if t.get("rule"))
    print(f"gen_fleet: {len(truth)} runs ({failing} planted failures) under {args.root}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
