#!/usr/bin/env python3
"""Deterministic generator of a log with N ranks and one event each: every rank prints gloo's recv
timeout (the line torch 2.13 printed in the real gloo runs under tests/fixtures/logs/, e.g.
distributed.rank-stalled--*-gloo-*), one rank first raises a ValueError traceback. For bench_memory.py.
With --tracebacks every rank prints the timeout as that fixture's ranks did: at the end of a traceback
(distributed.rank-stalled--2node-rank2-stuck-gloo-timeouts-per-node-logs, paths as stored there).
With --ray every line carries the prefix Ray gives a worker's output, `(RayTrainWorker pid=P, ip=IP) `,
8 ranks to an ip, a pid per rank.

    python bench/gen_ranks.py bench/out/ranks-100000.log --ranks 100000
"""

from __future__ import annotations

import argparse
import sys
from typing import BinaryIO

TIMEOUT = ("[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
           "Timed out waiting 15000ms for recv operation to complete\n")
TIMEOUT_TRACEBACK = (
    "[rank{rank}]: Traceback (most recent call last):\n"
    '[rank{rank}]:   File "/home/user/project/train.py", line 57, in <module>\n'
    "[rank{rank}]:     main()\n"
    '[rank{rank}]:   File "/home/user/project/train.py", line 50, in main\n'
    "[rank{rank}]:     loss.backward()\n"
    '[rank{rank}]:   File "/home/user/venv/lib/python3.11/site-packages/torch/_tensor.py", line 623, in backward\n'
    "[rank{rank}]:     torch.autograd.backward(\n"
    "[rank{rank}]: RuntimeError: [/__w/pytorch/pytorch/third_party/gloo/gloo/transport/tcp/unbound_buffer.cc:78] "
    "Timed out waiting 10000ms for recv operation to complete\n")
CAUSE = ("[rank{rank}]: Traceback (most recent call last):\n"
         '[rank{rank}]:   File "/job/train.py", line 41, in <module>\n'
         "[rank{rank}]:     loss = step(batch)\n"
         "[rank{rank}]: ValueError: batch 3 has 0 rows\n")


def ray_prefix(rank: int) -> str:
    node = rank // 8
    return f"(RayTrainWorker pid={20000 + rank}, ip=10.{node >> 16 & 255}.{node >> 8 & 255}.{node & 255}) "


def _prefixed(text: str, rank: int, ray: bool) -> str:
    if not ray:
        return text
    prefix = ray_prefix(rank)
    return "".join(prefix + line for line in text.splitlines(keepends=True))


def write(out: BinaryIO, ranks: int, fail_rank: int, tracebacks: bool = False, ray: bool = False) -> None:
    out.write(_prefixed(CAUSE.format(rank=fail_rank), fail_rank, ray).encode())
    chunk: list[str] = []
    symptom = TIMEOUT_TRACEBACK if tracebacks else TIMEOUT
    for rank in range(ranks):
        if rank != fail_rank:
            chunk.append(_prefixed(symptom.format(rank=rank), rank, ray))
        if len(chunk) >= 4096:
            out.write("".join(chunk).encode())
            chunk.clear()
    out.write("".join(chunk).encode())


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="output file, or - for stdout")
    parser.add_argument("--ranks", type=int, default=1000)
    parser.add_argument("--fail-rank", type=int, default=None, help="default: ranks // 3")
    parser.add_argument("--tracebacks", action="store_true", help="each rank's timeout ends a traceback")
    parser.add_argument("--ray", action="store_true", help="Ray worker prefixes: a pid per rank, 8 ranks an ip")
    args = parser.parse_args()
    fail_rank = args.fail_rank if args.fail_rank is not None else args.ranks // 3
    if args.path == "-":
        write(sys.stdout.buffer, args.ranks, fail_rank, args.tracebacks, args.ray)
    else:
        with open(args.path, "wb") as out:
            write(out, args.ranks, fail_rank, args.tracebacks, args.ray)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
