"""Benchmark `rootrank check` on a generated 10k-line training file, relative to `ast.parse`.

The editor calls `check_source` on every keystroke, so what matters is its cost next to the parse it
cannot avoid. Prints the median times and the ratio; it asserts nothing (timings are machine-dependent).

    .venv/bin/python bench/bench_check.py [--lines 10000] [--repeat 15]
"""

from __future__ import annotations

import argparse
import ast
import statistics
import time
from collections.abc import Callable

from rootrank.check import check_source

HEADER = '''"""Generated training file for the rootrank check benchmark."""
import functools
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.utils.checkpoint as cp
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.checkpoint import checkpoint as ckpt

LAYERS, DIM = 12, 256
ckpt_nr = functools.partial(ckpt, use_reentrant=False)
'''

BLOCK = '''

class Block{i}(nn.Module):
    """Transformer-ish block number {i}."""

    def __init__(self, dim=DIM):
        super().__init__()
        self.norm = nn.LayerNorm(dim)
        self.fc1 = nn.Linear(dim, 4 * dim)
        self.fc2 = nn.Linear(4 * dim, dim)
        self.act = nn.GELU()

    def forward(self, x):
        h = self.fc1(self.norm(x))
        h = self.act(h)
        return x + self.fc2(h)


class Model{i}(nn.Module):
    def __init__(self):
        super().__init__()
        self.blocks = nn.ModuleList([Block{i}() for _ in range(LAYERS)])
        self.head = nn.Linear(DIM, 10)

    def forward(self, x, mask=None):
        for j, block in enumerate(self.blocks):
            if j % 2 == 0:
                x = ckpt(block, x, use_reentrant=True)
            else:
                x = cp.checkpoint(block, x)
        x = ckpt_nr(self.head, x)
        return x


def schedule{i}(step, warmup=100, total=10_000):
    if step < warmup:
        return step / warmup
    progress = (step - warmup) / max(1, total - warmup)
    return 0.5 * (1.0 + math.cos(math.pi * progress))


def collate{i}(batch):
    xs = [item["x"] for item in batch]
    ys = [item["y"] for item in batch]
    lengths = [len(x) for x in xs]
    width = max(lengths)
    padded = [x + [0] * (width - len(x)) for x in xs]
    return {{"x": padded, "y": ys, "lengths": lengths}}


def train{i}(loader, steps=10):
    model = DDP(Model{i}(), find_unused_parameters=False)
    model = torch.compile(model)
    opt = torch.optim.AdamW(model.parameters(), lr=3e-4)
    for step, batch in enumerate(loader):
        loss = F.cross_entropy(model(batch["x"]), batch["y"])
        loss.backward()
        for group in opt.param_groups:
            group["lr"] = 3e-4 * schedule{i}(step)
        opt.step()
        opt.zero_grad(set_to_none=True)
        if step >= steps:
            break
    return model
'''


def generate(lines: int) -> str:
    parts = [HEADER]
    i = 0
    while sum(p.count("\n") for p in parts) < lines:
        parts.append(BLOCK.format(i=i))
        i += 1
    return "".join(parts)


def median_ms(function: object, repeat: int, clock: Callable[[], float] = time.process_time) -> float:
    """Median time of `function()`; CPU time by default, so other load on the machine does not skew it."""
    times = []
    for _ in range(repeat):
        start = clock()
        function()  # type: ignore[operator]
        times.append(clock() - start)
    return statistics.median(times) * 1000


def clear_caches() -> None:
    from rootrank.check import source as source_module
    from rootrank.check import walker

    walker._chunk_facts.cache_clear()
    source_module.keyword_lines.cache_clear()
    source_module.alias_lines.cache_clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=10_000)
    parser.add_argument("--repeat", type=int, default=15)
    parser.add_argument("--wall", action="store_true", help="measure wall-clock time instead of CPU time")
    args = parser.parse_args()
    clock = time.perf_counter if args.wall else time.process_time
    source = generate(args.lines)
    findings = check_source(source, "bench.py")
    edits = iter(range(10**9))

    def cold() -> None:
        clear_caches()
        check_source(source, "bench.py")

    def keystroke() -> None:
        # One character typed in one function: only that top-level chunk is parsed again.
        check_source(source.replace("return step / warmup", f"return step / warmup  # {next(edits)}", 1),
                     "bench.py")

    parse = median_ms(lambda: ast.parse(source), args.repeat, clock)
    first = median_ms(cold, args.repeat, clock)
    warm = median_ms(lambda: check_source(source, "bench.py"), args.repeat, clock)
    typed = median_ms(keystroke, args.repeat, clock)
    print(f"file: {source.count(chr(10))} lines, {len(source)} characters, {len(findings)} findings; "
          f"{'wall-clock' if args.wall else 'CPU'} time, median of {args.repeat}")
    print(f"ast.parse:                      {parse:8.1f} ms")
    print(f"check_source, first call:       {first:8.1f} ms   ({first / parse:.2f} x ast.parse)")
    print(f"check_source, after a keystroke:{typed:8.1f} ms   ({typed / parse:.2f} x ast.parse)")
    print(f"check_source, unchanged file:   {warm:8.1f} ms   ({warm / parse:.2f} x ast.parse)")


if __name__ == "__main__":
    main()
