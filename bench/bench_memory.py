#!/usr/bin/env python3
"""Peak memory of `rootrank diagnose --format json` on logs with many ranks and one event each.

For each rank count it writes a log with bench/gen_ranks.py (every rank a gloo recv timeout, one
rank an uncaught ValueError first), runs the CLI in a child and reads the child's peak RSS from
`getrusage(RUSAGE_CHILDREN)` (one child per size, so each figure is that run's own), then reports the
wall time, the JSON size and whether the initiating rank was found. Nothing is asserted: it reports.

    .venv/bin/python bench/bench_memory.py --ranks 1000 --ranks 100000 --ranks 1000000
    .venv/bin/python bench/bench_memory.py --style tracebacks --style ray   # the other shapes of cascade

`--style`: `lines` (each rank one timeout line, the default), `tracebacks` (each rank's timeout ends a
traceback, as real ranks print it), `ray` (every line behind Ray's worker prefix); see bench/gen_ranks.py.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent


def _rootrank() -> list[str]:
    venv = HERE.parent / ".venv" / "bin" / "rootrank"
    return [str(venv)] if venv.exists() else [sys.executable, "-m", "rootrank"]


def measure(ranks: int, workdir: Path, style: str = "lines") -> dict[str, object]:
    log = workdir / f"ranks-{ranks}-{style}.log"
    fail_rank = ranks // 3
    flags = [] if style == "lines" else [f"--{style}"]
    subprocess.run([sys.executable, str(HERE / "gen_ranks.py"), str(log), "--ranks", str(ranks),
                    "--fail-rank", str(fail_rank), *flags], check=True)
    out = workdir / f"ranks-{ranks}.json"
    # A fresh Python per size so RUSAGE_CHILDREN's maximum is this size's child alone.
    probe = ("import resource,subprocess,sys,time;t=time.perf_counter();"
             "r=subprocess.run(sys.argv[2:],stdout=open(sys.argv[1],'wb'));"
             "print(r.returncode,time.perf_counter()-t,resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)")
    res = subprocess.run([sys.executable, "-c", probe, str(out), *_rootrank(), "diagnose", "--format", "json",
                          str(log)], capture_output=True, text=True, check=True)
    rc, wall, maxrss_kib = res.stdout.split()
    doc = json.loads(out.read_text())
    root = doc.get("root_cause") or {}
    row: dict[str, object] = {
        "ranks": ranks, "style": style, "log_mib": log.stat().st_size / 2**20, "rc": int(rc), "wall_s": float(wall),
        "peak_rss_mib": int(maxrss_kib) / 1024, "json_mb": out.stat().st_size / 1e6,
        "rule": root.get("rule"), "rank_found": root.get("rank") == fail_rank,
        "collateral_count": doc.get("collateral_count"),
    }
    log.unlink()
    out.unlink()
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ranks", type=int, action="append", help="rank count (repeatable); default 1000, 100000")
    parser.add_argument("--style", action="append", choices=("lines", "tracebacks", "ray"),
                        help="shape of each rank's output (repeatable); default lines")
    parser.add_argument("--json", action="store_true", help="print the rows as JSON lines")
    args = parser.parse_args()
    sizes = args.ranks or [1000, 100000]
    styles = args.style or ["lines"]
    print(f"rootrank: {' '.join(_rootrank())}; resource maxrss unit: KiB (Linux); pid {os.getpid()}",
          file=sys.stderr)
    rows = []
    with tempfile.TemporaryDirectory(prefix="rr-bench-mem-") as tmp:
        for style in styles:
            for n in sizes:
                row = measure(n, Path(tmp), style)
                rows.append(row)
                if args.json:
                    print(json.dumps(row), flush=True)
    if not args.json:
        print("| ranks | output | log | wall | peak RSS | JSON | root cause | initiating rank found | collateral_count |")
        print("|---:|---|---:|---:|---:|---:|---|---|---:|")
        for r in rows:
            print(f"| {r['ranks']:,} | {r['style']} | {r['log_mib']:.1f} MiB | {r['wall_s']:.1f} s | {r['peak_rss_mib']:.0f} MiB "
                  f"| {r['json_mb']:.2f} MB | `{r['rule']}` | {'yes' if r['rank_found'] else 'no'} "
                  f"| {r['collateral_count']:,} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
