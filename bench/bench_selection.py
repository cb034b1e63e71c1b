"""How many lines reach the per-line pipeline: per log, the physical lines, the lines selected (fed to the
pipeline: anchor lines, a source's head, lines a traceback or launcher table asks for) and how many of
those repeat a message shape already seen (digits blanked: the failure cascade, whose per-line work
is remembered per shape, diagnose/shapes.py). Reports; asserts nothing.

    python bench/bench_selection.py LOG [LOG ...]            # files, or folders holding a run's files
    python bench/bench_selection.py --corpus ../shared/corpus   # every case of the shared corpus
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path

from rootrank.diagnose import Pipeline, diagnose_paths

_BLANK = bytes.maketrans(b"123456789", b"000000000")


def selection(paths: list[str]) -> tuple[int, int, int, str]:
    """(physical lines, selected lines, selected lines of a shape seen before, root cause) of one run."""
    pipeline = Pipeline()
    counts = [0, 0]
    shapes: set[bytes] = set()
    feed = pipeline.feed

    def counting(source: str, lines: Iterable[tuple[int, str]], path_hint: str | None = None) -> None:
        def counted() -> Iterator[tuple[int, str]]:
            for number, text in lines:
                counts[0] += 1
                shape = text.encode("utf-8", "surrogatepass").translate(_BLANK)
                if shape in shapes:
                    counts[1] += 1
                shapes.add(shape)
                yield number, text
        feed(source, counted(), path_hint)

    pipeline.feed = counting  # type: ignore[method-assign]
    diagnosis = diagnose_paths(paths, pipeline=pipeline)
    cause = diagnosis.root_cause.rule if diagnosis.root_cause else "-"
    return pipeline.physical_lines, counts[0], counts[1], cause


def _inputs(case: Path) -> list[str]:
    logs = case / "logs"
    if logs.is_dir():
        return sorted(str(f) for f in logs.rglob("*") if f.is_file())
    if case.is_dir():
        return [str(case / "log.txt")]
    return [str(case)]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("logs", nargs="*", type=Path)
    ap.add_argument("--corpus", type=Path, help="a folder of cases (each with log.txt or logs/)")
    args = ap.parse_args(argv)
    runs = list(args.logs)
    if args.corpus is not None:
        runs += sorted(p.parent for p in args.corpus.glob("*/expect.yaml")
                       if (p.parent / "log.txt").is_file() or (p.parent / "logs").is_dir())
    print("| log | lines | selected | selected % | of them repeated shapes | selected % without those | root cause |")
    print("|---|---:|---:|---:|---:|---:|---|")
    total = [0, 0, 0]
    for run in runs:
        lines, selected, repeated, cause = selection(_inputs(run))
        total = [total[0] + lines, total[1] + selected, total[2] + repeated]
        print(f"| {run.name} | {lines:,} | {selected:,} | {100 * selected / max(1, lines):.2f} % | {repeated:,} "
              f"| {100 * (selected - repeated) / max(1, lines):.2f} % | `{cause}` |")
    if len(runs) > 1:
        print(f"| all {len(runs)} | {total[0]:,} | {total[1]:,} | {100 * total[1] / max(1, total[0]):.2f} % "
              f"| {total[2]:,} | {100 * (total[1] - total[2]) / max(1, total[0]):.2f} % | |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
