#!/usr/bin/env python3
"""How fast is `rootrank diagnose` on a multi-GB, thousand-rank log, compared with grep?

    python bench/bench_diagnose.py --quick                      # 20 MiB, 1024 ranks (today's engine: ~10 s)
    python bench/bench_diagnose.py --size 200MiB --size 1GiB    # the real targets (opt-in)

For every size, on a log written by bench/gen_log.py (a CUDA OOM planted on one rank, then the NCCL
watchdog cascade on the other 1023), in the same run and after warming the page cache:

* `LC_ALL=C grep -E -c -f <patterns>`: the library's own regexes converted to POSIX ERE (GNU `\\b`,
  `\\w`, `\\s` kept; lookarounds, backreferences and the like skipped and counted);
* `LC_ALL=C grep -F -c -f <literals>`: the library's prefilter literals, a fixed-string baseline;
* `rg --no-unicode -c -f <patterns>` when ripgrep is installed (same regexes, Rust-regex class syntax);
* `rootrank diagnose --format json <file>`: wall time and peak RSS (from wait4's rusage of that child).

It checks the planted rank is the JSON root_cause.rank, and that the diagnosis (rule, rank) equals the
one for a small log from the same generator (same seed, ranks, prefix, failure). It also times a
selection-sized input (< 1 MB, the text around the OOM) through the CLI including start-up, and
in-process through `rootrank.diagnose.diagnose_text`.

Nothing here asserts a time: it reports (Markdown on stdout and in bench/out/bench_diagnose.md, raw
figures in bench/out/bench_diagnose.json). Exit status is 0 unless something could not run.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

import gen_log  # noqa: E402

MB = 1e6
MiB = 2**20


# ------------------------------------------------------------------------------ Python regex -> ERE


class UnsupportedError(Exception):
    pass


_ERE_SPECIAL = set(".[]()*+?{}|^$\\")
_QUANT = re.compile(r"\{(\d*)(,?)(\d*)\}")


def _lit(c: str, icase: bool) -> str:
    if c in _ERE_SPECIAL:
        return "\\" + c
    if icase and c.isalpha() and c.lower() != c.upper():
        return f"[{c.lower()}{c.upper()}]"
    if c == "\n":
        raise UnsupportedError("newline")
    return c


def _class(pat: str, i: int, icase: bool, rust: bool = False) -> tuple[str, int]:
    """Translate the bracket expression starting at pat[i] == '['; returns (ERE, index after ']')."""
    i += 1
    neg = False
    if i < len(pat) and pat[i] == "^":
        neg, i = True, i + 1
    chars: set[str] = set()
    ranges: list[tuple[str, str]] = []
    names: list[str] = []
    first = True
    while True:
        if i >= len(pat):
            raise UnsupportedError("unterminated class")
        c = pat[i]
        if c == "]" and not first:
            i += 1
            break
        first = False
        if c == "[" and pat[i + 1:i + 2] in (":", ".", "="):
            raise UnsupportedError("POSIX class syntax inside a Python class")
        if c == "\\":
            e = pat[i + 1]
            i += 2
            if e == "d":
                ranges.append(("0", "9"))
                continue
            if e == "w":
                names.append("[:alnum:]")
                chars.add("_")
                continue
            if e == "s":
                names.append("[:space:]")
                continue
            if e in "DWSbB":
                raise UnsupportedError(f"\\{e} inside a class")
            if e == "t":
                atom = "\t"
            elif e == "n":
                raise UnsupportedError("newline")
            elif e == "x":
                atom, i = chr(int(pat[i:i + 2], 16)), i + 2
            elif e.isalnum():
                raise UnsupportedError(f"\\{e} inside a class")
            else:
                atom = e
        else:
            atom = c
            i += 1
        # a range?
        if i + 1 < len(pat) and pat[i] == "-" and pat[i + 1] != "]":
            hi = pat[i + 1]
            j = i + 2
            if hi == "\\":
                hi, j = pat[i + 2], i + 3
                if hi.isalnum():
                    raise UnsupportedError("escape as a range end")
            ranges.append((atom, hi))
            i = j
        else:
            chars.add(atom)
    if icase:
        for lo, hi in list(ranges):
            if lo.isalpha() and hi.isalpha() and lo.islower() == hi.islower():
                ranges.append((lo.swapcase(), hi.swapcase()))
        for c in list(chars):
            if c.isalpha():
                chars.add(c.swapcase())
    if rust:  # Rust regex (ripgrep): escapes work in classes, and [ ] & - ~ ^ must be escaped
        def esc(c: str) -> str:
            return "\\" + c if c in "[]\\^-&~" else c
        body = "".join(names)
        body += "".join(f"{esc(lo)}-{esc(hi)}" for lo, hi in ranges) + "".join(esc(c) for c in sorted(chars))
        if not body:
            raise UnsupportedError("empty class")
        return "[" + ("^" if neg else "") + body + "]", i
    body = ""
    if "]" in chars:
        body += "]"
    body += "".join(names)
    body += "".join(f"{lo}-{hi}" for lo, hi in ranges)
    rest = sorted(chars - {"]", "-", "^"})
    body += "".join(rest)
    if "^" in chars:
        if not body:
            raise UnsupportedError("class of only ^")
        body += "^"
    if "-" in chars:
        body += "-"
    if not body:
        raise UnsupportedError("empty class")
    return "[" + ("^" if neg else "") + body + "]", i


def python_to_ere(pat: str, icase: bool = False, max_bound: int | None = None, relaxed: list | None = None,
                  rust: bool = False) -> str:
    """Translate a Python `re` pattern to a GNU grep -E pattern with the same set of matching lines.

    With `max_bound`, a counted repeat whose upper bound exceeds it (`.{1,4000}`) becomes unbounded
    (`.{1,}`), noted in `relaxed`: GNU grep unrolls counted repeats into its DFA, and a handful of
    `{0,3000}` make it hundreds of times slower (and take 700+ MiB), which a person grepping would not do.
    """
    out: list[str] = []
    i, n = 0, len(pat)
    if pat.startswith("(?i)"):
        icase, i = True, 4
    while i < n:
        c = pat[i]
        if c == "\\":
            if i + 1 >= n:
                raise UnsupportedError("trailing backslash")
            e = pat[i + 1]
            i += 2
            simple = {"d": "[0-9]", "D": "[^0-9]", "w": "[[:alnum:]_]", "W": "[^[:alnum:]_]", "s": "[[:space:]]",
                      "S": "[^[:space:]]", "b": "\\b", "B": "\\B", "A": "^", "Z": "$", "t": "\t"}
            if e in simple:
                out.append(simple[e])
            elif e == "x":
                out.append(_lit(chr(int(pat[i:i + 2], 16)), icase))
                i += 2
            elif e.isdigit():
                raise UnsupportedError("backreference")
            elif e.isalnum():
                raise UnsupportedError(f"escape \\{e}")
            else:
                out.append(_lit(e, icase))
        elif c == "[":
            cls, i = _class(pat, i, icase, rust)
            out.append(cls)
        elif c == "(":
            if pat.startswith("(?:", i):
                out.append("(")
                i += 3
            elif pat.startswith("(?P<", i):
                j = pat.index(">", i)
                out.append("(")
                i = j + 1
            elif pat.startswith("(?#", i):
                i = pat.index(")", i) + 1
            elif pat.startswith("(?", i):
                raise UnsupportedError("lookaround, backreference or inline flag")
            else:
                out.append("(")
                i += 1
        elif c in "*+?":
            out.append(c)
            i += 1
            if i < n and pat[i] in "?+":  # lazy / possessive: same set of matching lines
                i += 1
        elif c == "{":
            m = _QUANT.match(pat, i)
            if m and (m.group(1) or m.group(3)):
                lo, hi = m.group(1) or "0", m.group(3)
                if max_bound is not None and hi and int(hi) > max_bound:
                    hi = ""
                    if relaxed is not None:
                        relaxed.append(m.group(0))
                out.append("{" + lo + m.group(2) + hi + "}")
                i = m.end()
                if i < n and pat[i] in "?+":
                    i += 1
            else:
                out.append("\\{")
                i += 1
        elif c in ".^$|)":
            out.append(c)
            i += 1
        else:
            out.append(_lit(c, icase))
            i += 1
    return "".join(out)


def build_pattern_files(out_dir: Path, sample: Path, max_bound: int | None) -> dict:
    """Write patterns.ere and literals.txt from the library; check each ERE against Python on `sample`."""
    from rootrank.library import load_library

    patterns = load_library().patterns
    eres: list[str] = []
    literals: set[str] = set()
    skipped: dict[str, int] = {}
    rejected = 0
    relaxed_patterns = 0
    exact: list[str] = []
    rusts: list[str] = []
    differ: list[str] = []
    sample_lines = sample.read_bytes().decode("utf-8", "surrogateescape").split("\n")
    if sample_lines and sample_lines[-1] == "":
        sample_lines.pop()
    for p in patterns:
        if p.literal and not p.ignore_case:
            literals.add(p.literal)
        icase = bool(p.ignore_case or p.regex.flags & re.IGNORECASE)
        relaxed: list[str] = []
        try:
            ere = python_to_ere(p.regex.pattern, icase, max_bound, relaxed)
            exact.append(python_to_ere(p.regex.pattern, icase))
        except (UnsupportedError, ValueError, IndexError) as exc:
            reason = str(exc) if isinstance(exc, UnsupportedError) else "unparsed"
            skipped[reason] = skipped.get(reason, 0) + 1
            continue
        check = subprocess.run(["grep", "-E", "-c", "-e", ere, str(sample)], capture_output=True,
                               env={**os.environ, "LC_ALL": "C"})
        if check.returncode == 2:
            rejected += 1
            continue
        want = sum(1 for line in sample_lines if p.regex.search(line))
        got = int(check.stdout.decode().strip() or 0)
        if want != got:
            differ.append(f"{p.entry_id}: python {want} lines, grep {got} lines: {p.regex.pattern[:80]}")
        eres.append(ere)
        rusts.append(python_to_ere(p.regex.pattern, icase, max_bound, None, rust=True))
        relaxed_patterns += bool(relaxed)
    (out_dir / "patterns-exact-bounds.ere").write_text("\n".join(exact) + "\n", encoding="utf-8",
                                                        errors="surrogateescape")
    (out_dir / "patterns.rg").write_text("\n".join(rusts) + "\n", encoding="utf-8", errors="surrogateescape")
    (out_dir / "patterns.ere").write_text("\n".join(eres) + "\n", encoding="utf-8", errors="surrogateescape")
    (out_dir / "literals.txt").write_text("\n".join(sorted(literals)) + "\n", encoding="utf-8")
    return {"library_patterns": len(patterns), "converted": len(eres), "skipped": skipped,
            "rejected_by_grep": rejected, "relaxed_bounds": relaxed_patterns, "max_bound": max_bound, "literals": len(literals),
            "differ_on_small_log": len(differ), "differ_detail": differ[:20]}


# ----------------------------------------------------------------------------------------- running


TIME_BIN = "/usr/bin/time" if os.access("/usr/bin/time", os.X_OK) else None


def run_measured(cmd: list[str], stdout_path: Path | None = None, env: dict | None = None,
                 timeout: float | None = None) -> dict:
    """Run `cmd`: wall seconds, peak RSS (MiB), exit status and the first line of its output.

    Output always goes to a file: GNU grep stops at the first match when its output is /dev/null.
    Peak RSS comes from /usr/bin/time when present (a fork of this Python process would carry this
    process's own high-water mark into the child's ru_maxrss), else from wait4.
    """
    stdout_path = stdout_path or Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_stdout.{os.getpid()}"
    rss_file = stdout_path.with_name(stdout_path.name + ".rss")
    full = [TIME_BIN, "-f", "%M %U %S", "-o", str(rss_file), *cmd] if TIME_BIN else cmd
    with open(stdout_path, "wb") as out:
        t0 = time.perf_counter()
        proc = subprocess.Popen(full, stdout=out, stderr=subprocess.PIPE, env=env)
        try:
            _, stderr = proc.communicate(timeout=timeout)
            timed_out = False
        except subprocess.TimeoutExpired:
            proc.kill()
            _, stderr = proc.communicate()
            timed_out = True
        wall = time.perf_counter() - t0
    rss_mib = user = sys_s = None
    if TIME_BIN:
        try:
            fields = rss_file.read_text().strip().splitlines()[-1].split()
            rss_mib, user, sys_s = int(fields[0]) / 1024, float(fields[1]), float(fields[2])
        except (OSError, IndexError, ValueError):
            pass
        rss_file.unlink(missing_ok=True)
    with open(stdout_path, "rb") as fh:
        first = fh.readline(200).decode("utf-8", "replace").strip()
    return {"wall_s": wall, "peak_rss_mib": rss_mib, "rc": proc.returncode, "user_s": user, "sys_s": sys_s,
            "timed_out": timed_out, "first_line": first,
            "stderr_tail": stderr.decode("utf-8", "replace")[-400:]}


def best_of(n: int, cmd: list[str], **kw) -> dict:
    runs = [run_measured(cmd, **kw) for _ in range(n)]
    best = min(runs, key=lambda r: (r["user_s"] or 0) + (r["sys_s"] or 0) if TIME_BIN else r["wall_s"])
    best["runs"] = [round(r["wall_s"], 4) for r in runs]
    return best


def median_of(n: int, run) -> dict:
    """The run with the median wall time of `n` (rootrank on a shared machine: one slow neighbour moves a
    single run)."""
    runs = sorted((run() for _ in range(max(1, n))), key=lambda r: r.get("wall_s") or 0)
    middle = runs[len(runs) // 2]
    middle["runs"] = [round(r.get("wall_s") or 0, 3) for r in runs]
    return middle


def other_generator(directory: Path, out: Path, sizes: list[int], ranks: int, seed: int, repeat: int,
                    rootrank_repeat: int, timeout: float, regen: bool, say) -> dict:
    """Logs of an independent generator (`DIR/gen_log.py`, writing a `.truth.json` with the initiating
    rank) against grep with that generator's own comparable patterns (`DIR/rules.py --emit`): grep,
    then rootrank with each engine, one after the other on the same file, each size in one run."""
    env_c = {**os.environ, "LC_ALL": "C"}
    patterns_dir = out / "other"
    patterns_dir.mkdir(parents=True, exist_ok=True)
    subprocess.run([sys.executable, str(directory / "rules.py"), "--emit", str(patterns_dir),
                    str(directory / "patterns.txt")], check=True, capture_output=True)
    patterns = patterns_dir / "patterns.ere.txt"
    result: dict = {"generator": f"{directory.parent.name}/{directory.name}/gen_log.py", "ranks": ranks, "seed": seed, "sizes": [],
                    "patterns": sum(1 for line in patterns.read_text().splitlines() if line.strip())}
    for size in sizes:
        path = patterns_dir / f"other-{size}-r{ranks}-s{seed}.log"
        truth_path = Path(str(path) + ".truth.json")
        if regen or not path.exists() or not truth_path.exists():
            say(f"other generator: writing {size / MiB:.0f} MiB ...")
            subprocess.run([sys.executable, str(directory / "gen_log.py"), "-o", str(path), "--size", str(size),
                            "--ranks", str(ranks), "--seed", str(seed)], check=True, capture_output=True)
        truth = json.loads(truth_path.read_text())
        for _ in range(2):
            warm(path)
        nbytes = path.stat().st_size
        tools: dict = {"grep -E": best_of(repeat, ["grep", "-E", "-c", "-f", str(patterns), str(path)], env=env_c)}
        engines = ["python"] + (["hyperscan"] if has_hyperscan() else [])
        for engine in engines:
            name = "rootrank diagnose" + (" [fast]" if engine == "hyperscan" else "")
            say(f"other generator: {name} {nbytes / MiB:.0f} MiB x{rootrank_repeat} ...")
            tools[name] = median_of(rootrank_repeat, lambda engine=engine, path=path: diagnose(
                path, path.with_suffix(f".{engine}.json"), timeout, engine=engine))
        result["sizes"].append({"bytes": nbytes, "lines": truth.get("lines"), "fail_rank": truth["initiating_rank"],
                                "tools": tools})
    # The smallest log of the same options (start-up output, one block of steps, the failure cascade): what
    # every size pays whatever its length, which sets how the ratio to grep changes with size.
    path = patterns_dir / f"other-0-r{ranks}-s{seed}.log"
    if regen or not path.exists():
        subprocess.run([sys.executable, str(directory / "gen_log.py"), "-o", str(path), "--size", "0",
                        "--ranks", str(ranks), "--seed", str(seed)], check=True, capture_output=True)
    warm(path)
    fixed: dict = {}
    for engine in ["python"] + (["hyperscan"] if has_hyperscan() else []):
        name = "rootrank diagnose" + (" [fast]" if engine == "hyperscan" else "")
        say(f"other generator: {name} on the smallest log x{rootrank_repeat} ...")
        fixed[name] = median_of(rootrank_repeat, lambda engine=engine: diagnose(
            path, path.with_suffix(f".{engine}.json"), timeout, engine=engine))
    result["fixed"] = {"bytes": path.stat().st_size, "tools": fixed}
    return result


def size_scaling(sizes: list[dict], fixed: dict | None) -> list[str]:
    """How each engine's ratio to grep changes with size: its time on the smallest log (paid at every size)
    and its throughput past it, from the two largest sizes."""
    if not fixed or len(sizes) < 2:
        return []
    lines = ["", "How the ratio changes with size (rootrank's time is about its time on the smallest log, the "
             "failure cascade and start-up, plus the bytes at its throughput between the two largest sizes):", ""]
    small, large = sizes[-2], sizes[-1]
    for name, base in fixed["tools"].items():
        a, b = small["tools"].get(name, {}), large["tools"].get(name, {})
        if not (base.get("wall_s") and a.get("wall_s") and b.get("wall_s")) or b["wall_s"] <= a["wall_s"]:
            continue
        rate = (large["bytes"] - small["bytes"]) / MB / (b["wall_s"] - a["wall_s"])
        shares = ", ".join(f"{base['wall_s'] / run['tools'][name]['wall_s']:.0%} of it at {run['bytes'] / MiB:,.0f} MiB "
                           f"({run['tools']['grep -E']['wall_s'] / run['tools'][name]['wall_s']:.2f}x grep)"
                           for run in sizes if run["tools"].get(name, {}).get("wall_s"))
        lines.append(f"- `{name}`: {base['wall_s']:.2f} s on the smallest log ({fixed['bytes'] / MiB:.1f} MiB), "
                     f"then {rate:,.0f} MB/s; that first part is {shares}.")
    return lines


def other_markdown(other: dict) -> str:
    md = ["", f"### Logs of an independent generator (`{other['generator']}`)", "",
          f"{other['ranks']} ranks, seed {other['seed']}; reference: `LC_ALL=C grep -E -c -f patterns.ere.txt` with "
          f"that generator's own {other['patterns']} comparable patterns, on the same file in the same run "
          f"(grep best of its runs, rootrank the median of its runs, wall times of each listed). CPU: user+sys "
          f"of that run (rootrank's includes its second process); on a loaded machine the CPU ratio moves less "
          f"than the wall ratio.", "",
          "| log (generator) | tool | wall (runs) | MB/s | throughput vs grep -E | CPU (user+sys) | CPU: grep's / its "
          "| peak RSS | planted rank found |",
          "|---|---|---:|---:|---:|---:|---:|---:|---|"]
    for run in other["sizes"]:
        grep_wall = run["tools"]["grep -E"]["wall_s"]
        grep_cpu = _cpu(run["tools"]["grep -E"])
        for name, t in run["tools"].items():
            found = "-"
            if name.startswith("rootrank"):
                found = "yes" if t.get("rank") == run["fail_rank"] else f"**no** (rank {t.get('rank')})"
            runs = ", ".join(f"{w:.2f}" for w in t.get("runs", []))
            md.append(f"| {run['bytes'] / MiB:,.0f} MiB ({other['generator']}) | {name} | {t['wall_s']:.2f} s "
                      f"({runs}) | {run['bytes'] / MB / t['wall_s']:,.1f} | {grep_wall / t['wall_s']:.2f}x | "
                      f"{_cpu_text(t)} | {_cpu_ratio(grep_cpu, _cpu(t))} | {fmt_rss(t.get('peak_rss_mib'))} | {found} |")
    fixed = other.get("fixed")
    for name, t in (fixed or {}).get("tools", {}).items():
        runs = ", ".join(f"{w:.2f}" for w in t.get("runs", []))
        md.append(f"| {fixed['bytes'] / MiB:,.1f} MiB, the smallest log ({other['generator']}) | {name} | "
                  f"{t['wall_s']:.2f} s ({runs}) | {fixed['bytes'] / MB / t['wall_s']:,.1f} | - | {_cpu_text(t)} | - | "
                  f"{fmt_rss(t.get('peak_rss_mib'))} | - |")
    md.extend(size_scaling(other["sizes"], fixed))
    return "\n".join(md) + "\n"


def _cpu(t: dict) -> float | None:
    if t.get("user_s") is None or t.get("sys_s") is None:
        return None
    return float(t["user_s"]) + float(t["sys_s"])


def _cpu_text(t: dict) -> str:
    cpu = _cpu(t)
    return "-" if cpu is None else f"{cpu:.2f} s"


def _cpu_ratio(reference: float | None, cpu: float | None) -> str:
    return "-" if not reference or not cpu else f"{reference / cpu:.2f}x"


def warm(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(8 * MiB):
            pass


def rootrank_cmd() -> list[str]:
    exe = shutil.which("rootrank", path=str(Path(sys.executable).parent) + os.pathsep + os.environ.get("PATH", ""))
    return [exe] if exe else [sys.executable, "-m", "rootrank"]


def compile_bytecode() -> str:
    """Write rootrank's bytecode as `pip install` does, before anything is timed: an editable install
    under PYTHONDONTWRITEBYTECODE (set on some machines) would compile its modules again at every start."""
    where = subprocess.run([sys.executable, "-c", "import os, rootrank; print(os.path.dirname(rootrank.__file__))"],
                           capture_output=True, text=True)
    package = where.stdout.strip()
    if where.returncode != 0 or not package:
        return "bytecode: rootrank is not importable here; timing the command as it is"
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    done = subprocess.run([sys.executable, "-m", "compileall", "-q", package], capture_output=True, env=env)
    return f"bytecode: {package} compiled" if done.returncode == 0 else f"bytecode: compileall failed in {package}"


def has_hyperscan() -> bool:
    probe = subprocess.run([sys.executable, "-c", "import hyperscan"], capture_output=True)
    return probe.returncode == 0


def diagnose(path: Path, json_out: Path, timeout: float | None, engine: str = "python",
             ulimit_files: int | None = None) -> dict:
    """`rootrank diagnose` with one prefilter engine: "python" (the pure-Python default) or "hyperscan"
    (`pip install rootrank[fast]`); optionally under `ulimit -n`."""
    env = {**os.environ, "ROOTRANK_ENGINE": engine}
    cmd = [*rootrank_cmd(), "diagnose", "--format", "json", "--no-progress", str(path)]
    if ulimit_files is not None:
        cmd = ["sh", "-c", f'ulimit -n {int(ulimit_files)} && exec "$@"', "sh", *cmd]
    r = run_measured(cmd, stdout_path=json_out, timeout=timeout, env=env)
    try:
        doc = json.loads(json_out.read_text())
        rc = doc.get("root_cause") or {}
        r.update(rule=rc.get("rule"), rank=rc.get("rank"), host=rc.get("host"),
                 collateral=doc.get("collateral_count", len(doc.get("collateral") or [])),
                 lines_read=doc.get("lines_read"))
    except (OSError, ValueError) as exc:
        r.update(rule=None, rank=None, error=f"no JSON: {exc}")
    return r


def ensure_log(path: Path, size: int, ranks: int, prefix: str, fail_rank: int, seed: int, regen: bool) -> dict:
    meta_path = path.with_suffix(".meta.json")
    want = {"generator": gen_log.GEN_VERSION, "ranks": ranks, "prefix": prefix, "fail_rank": fail_rank,
            "seed": seed, "size_arg": size}
    if not regen and path.exists() and meta_path.exists():
        meta = json.loads(meta_path.read_text())
        if all(meta.get(k) == v for k, v in want.items()) and path.stat().st_size == meta.get("bytes"):
            meta["reused"] = True
            return meta
    t0 = time.perf_counter()
    with open(path, "wb", buffering=4 * MiB) as fh:
        meta = gen_log.generate(fh, size, ranks, prefix, fail_rank, seed)
    secs = time.perf_counter() - t0
    meta.update(want, seconds=secs, gen_mb_per_s=meta["bytes"] / MB / secs, reused=False)
    meta_path.write_text(json.dumps(meta, indent=2))
    return meta


def selection_of(log: Path, out: Path, limit: int = 256 * 1024) -> int:
    """The text a user would select: up to `limit` bytes ending 120 lines after the planted error line."""
    data = log.read_bytes()
    at = data.find(b"OutOfMemoryError: CUDA out of memory")
    if at < 0:
        at = len(data) // 2
    end = at
    for _ in range(120):
        nxt = data.find(b"\n", end + 1)
        if nxt < 0:
            break
        end = nxt
    start = max(0, end - limit)
    start = data.find(b"\n", start) + 1 if start else 0
    out.write_bytes(data[start:end + 1])
    return end + 1 - start


# in a fresh interpreter, so the first call really pays for loading the library
INPROC = """
import json, statistics, sys, time
t0 = time.perf_counter()
from rootrank.diagnose import diagnose_text
t1 = time.perf_counter()
text = open(sys.argv[1], encoding="utf-8", errors="replace").read()
t2 = time.perf_counter()
d = diagnose_text(text)
t3 = time.perf_counter()
times = []
for _ in range(int(sys.argv[2])):
    a = time.perf_counter()
    diagnose_text(text)
    times.append(time.perf_counter() - a)
rc = d.root_cause
print(json.dumps({"import_s": t1 - t0, "first_s": t3 - t2, "median_s": statistics.median(times),
                  "rule": getattr(rc, "rule", None), "rank": getattr(rc, "rank", None)}))
"""


# ------------------------------------------------------------------------------------------- report


def split_per_rank(log: Path, directory: Path) -> int:
    """Write each `[rankN]:` line of `log`, prefix removed, to `directory/rankN.log` (as `torchrun --log-dir`
    or a Slurm `--output=%t` job leaves them) and the launcher's own lines to `launcher.log`; returns the
    number of files. Rewritten each time: a few MiB."""
    if directory.exists():
        shutil.rmtree(directory)
    directory.mkdir(parents=True)
    per_rank: dict[str, list[bytes]] = {}
    prefix = re.compile(rb"^\[rank(\d+)\]:\s?")
    with open(log, "rb") as fh:
        for line in fh:
            m = prefix.match(line)
            key = f"rank{int(m.group(1))}.log" if m else "launcher.log"
            per_rank.setdefault(key, []).append(line[m.end():] if m else line)
    for name, lines in per_rank.items():
        (directory / name).write_bytes(b"".join(lines))
    return len(per_rank)


def fmt_ratio(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.0f}×" if x >= 100 else f"{x:,.1f}×" if x >= 10 else f"{x:,.2f}×"


def cpu_of(t: dict) -> float | None:
    if t.get("user_s") is None or t.get("sys_s") is None:
        return None
    return max(t["user_s"] + t["sys_s"], 0.005)  # /usr/bin/time has 10 ms resolution


def fmt_rss(mib: float | None) -> str:
    return "-" if mib is None else f"{mib:,.0f} MiB"


def markdown(res: dict) -> str:
    md: list[str] = []
    cfg = res["config"]
    pf = res["patterns"]
    for run in res["sizes"]:
        g = run["tools"].get("grep -E", {})
        for key in ("rootrank diagnose", "rootrank diagnose [fast]"):
            r = run["tools"].get(key, {})
            if g.get("wall_s") and r.get("wall_s") and r.get("rc") in (0, 1) and not r.get("error"):
                md.append(f"**{run['bytes'] / MiB:,.0f} MiB (bench/gen_log.py), {cfg['ranks']} ranks: `{key}` "
                         f"{run['bytes'] / MB / r['wall_s']:,.1f} MB/s vs `grep -E` "
                         f"{run['bytes'] / MB / g['wall_s']:,.0f} MB/s: throughput "
                         f"{g['wall_s'] / r['wall_s']:.2f}x grep's ({fmt_ratio(r['wall_s'] / g['wall_s'])} its wall time)"
                         + (f", {fmt_ratio(cpu_of(r) / cpu_of(g))} its CPU time" if cpu_of(r) and cpu_of(g) else "")
                         + f"; peak RSS {fmt_rss(r['peak_rss_mib'])}.**")
                md.append("")
    md.append(f"Generated logs (this repository's generator, bench/gen_log.py): {cfg['ranks']} ranks, prefix `{cfg['prefix']}`, CUDA OOM planted on rank "
             f"{cfg['fail_rank']}, seed {cfg['seed']}; page cache warmed; grep/rg best of {cfg['repeat']}, "
             f"rootrank one run per size.")
    md.append("")
    sk = ", ".join(f"{v} {k}" for k, v in sorted(pf["skipped"].items())) or "none"
    md.append(f"Patterns: {pf['converted']} of the library's {pf['library_patterns']} regexes converted to ERE "
             f"(skipped: {sk}; rejected by grep: {pf['rejected_by_grep']}; match counts differ from Python's on "
             f"the small log: {pf['differ_on_small_log']}); in {pf['relaxed_bounds']} of them counted repeats above "
             f"{{{pf['max_bound']}}} were made unbounded (`.{{0,3000}}` → `.{{0,}}`; GNU grep unrolls counted repeats "
             f"into its DFA, see `--exact-ere`); {pf['literals']} prefilter literals for `grep -F`.")
    md.append("")
    md.append("| log | tool | wall | MB/s | wall vs grep -E | CPU (user+sys) | CPU vs grep -E | peak RSS | "
             "lines matched |")
    md.append("|---|---|---:|---:|---:|---:|---:|---:|---:|")
    sm = res.get("small") or {}
    if sm.get("wall_s"):
        cpu = cpu_of(sm)
        md.append(f"| {sm['bytes'] / MiB:,.1f} MiB (small log) | rootrank diagnose | {sm['wall_s']:.2f} s | "
                  f"{sm['bytes'] / MB / sm['wall_s']:,.1f} | - | {'-' if cpu is None else f'{cpu:.2f} s'} | - | "
                  f"{fmt_rss(sm.get('peak_rss_mib'))} | - |")
    for run in res["sizes"]:
        size = f"{run['bytes'] / MiB:,.0f} MiB (bench/gen_log.py)"
        base = run["tools"].get("grep -E", {}).get("wall_s")
        for name, t in run["tools"].items():
            if t.get("skipped"):
                md.append(f"| {size} | {name} | - | - | - | - | - | - | {t['skipped']} |")
                continue
            ratio = t["wall_s"] / base if base else None
            cpu = cpu_of(t)
            cpu_base = cpu_of(run["tools"].get("grep -E", {}))
            cpu_ratio = cpu / cpu_base if cpu is not None and cpu_base else None
            note = (" (timed out)" if t.get("timed_out")
                    else f" (**killed by signal {-t['rc']}**)" if isinstance(t.get("rc"), int) and t["rc"] < 0
                    else " (**failed**, rc 2)" if t.get("rc") == 2 else "")
            md.append(f"| {size} | {name}{note} | {t['wall_s']:.2f} s | {run['bytes'] / MB / t['wall_s']:,.1f} | "
                     f"{fmt_ratio(ratio)} | {'-' if cpu is None else f'{cpu:.2f} s'} | {fmt_ratio(cpu_ratio)} | "
                     f"{fmt_rss(t['peak_rss_mib'])} | "
                     f"{t.get('first_line') if name.startswith(('grep', 'rg')) else '-'} |")
    md.append("")
    md.append("| log | root cause found | planted rank found | same as small log | collateral ranks |")
    md.append("|---|---|---|---|---:|")
    small = res.get("small") or {}
    for run in [*res["sizes"], {"bytes": small.get("bytes", 0), "tools": {"rootrank diagnose": small},
                                "label": "small"}]:
        t = run["tools"].get("rootrank diagnose") or {}
        if not t or t.get("skipped"):
            continue
        label = "small " if run.get("label") else ""
        same = "-" if run.get("label") else ("yes" if (t.get("rule"), t.get("rank")) ==
                                             (small.get("rule"), small.get("rank")) else "**no**")
        found = "yes" if t.get("rank") == cfg["fail_rank"] else f"**no** (rank {t.get('rank')})"
        if t.get("error"):
            found = f"**no result** (exit {t.get('rc')}: {(t.get('stderr_tail') or '').strip()[-120:] or 'no output'})"
        md.append(f"| {label}{run['bytes'] / MiB:,.1f} MiB | `{t.get('rule')}` | {found} | {same} | "
                 f"{t.get('collateral', '-')} |")
    if res.get("styles"):
        md.append("")
        md.append("Launcher prefix styles (a small log per style, 64 ranks, OOM planted on rank "
                 f"{res['styles'][0]['fail_rank']}; pdsh and none carry no rank on worker lines):")
        md.append("")
        md.append("| prefix | root cause | rank found | planted rank found | host |")
        md.append("|---|---|---:|---|---|")
        for st in res["styles"]:
            ok = "yes" if st["rank"] == st["fail_rank"] else "**no**"
            md.append(f"| `{st['prefix']}` | `{st['rule']}` | {st['rank']} | {ok} | {st['host'] or '-'} |")
    files = res.get("per_rank_files")
    if files:
        found = "yes" if files.get("rank") == files["fail_rank"] else f"**no** (rank {files.get('rank')})"
        md.append("")
        md.append(f"Per-rank files: the small log split into {files['files']:,} files (`rankN.log` + `launcher.log`, "
                  f"{files['bytes'] / MiB:,.1f} MiB), diagnosed as one run under `ulimit -n 64`: "
                  f"`{files.get('rule')}`, planted rank found: {found}, {files.get('collateral')} collateral ranks, "
                  f"{(files.get('wall_s') or 0):.2f} s, peak RSS {fmt_rss(files.get('peak_rss_mib'))}.")
    sel = res.get("selection")
    if sel:
        md.append("")
        md.append(f"Selection-sized input ({sel['bytes'] / 1024:,.0f} KiB around the OOM):")
        md.append("")
        md.append("| what | time | vs `rootrank --version` |")
        md.append("|---|---:|---:|")
        start = sel["startup_s"]
        md.append(f"| `rootrank --version` (start-up only), median of {sel['n']} | {start * 1000:,.0f} ms | 1× |")
        md.append(f"| `rootrank diagnose --format json sel.txt`, median of {sel['n']} | "
                 f"{sel['cli_s'] * 1000:,.0f} ms | {fmt_ratio(sel['cli_s'] / start)} |")
        if sel.get("inproc_s") is not None:
            md.append(f"| in-process `import rootrank.diagnose` (fresh interpreter) | "
                     f"{sel['import_s'] * 1000:,.1f} ms | {fmt_ratio(sel['import_s'] / start)} |")
            md.append(f"| in-process `diagnose_text`, first call (loads the library) | "
                     f"{sel['inproc_first_s'] * 1000:,.1f} ms | {fmt_ratio(sel['inproc_first_s'] / start)} |")
            md.append(f"| in-process `diagnose_text`, median of {max(sel['n'], 5)} later calls | "
                     f"{sel['inproc_s'] * 1000:,.1f} ms | {fmt_ratio(sel['inproc_s'] / start)} |")
        else:
            md.append(f"| in-process `diagnose_text` | failed: {sel.get('error')} | - |")
        md.append("")
        md.append(f"Selection diagnosis: `{sel.get('rule')}` on rank {sel.get('rank')}.")
    return "\n".join(md) + "\n"


# --------------------------------------------------------------------------------------------- main


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="20 MiB only (the default when no --size is given)")
    ap.add_argument("--size", action="append", type=gen_log.parse_size, default=[],
                    help="log size to test; repeatable, e.g. --size 200MiB --size 1GiB")
    ap.add_argument("--ranks", type=int, default=1024)
    ap.add_argument("--prefix", choices=gen_log.PREFIX_STYLES, default="rank")
    ap.add_argument("--fail-rank", type=int, default=137)
    ap.add_argument("--seed", type=int, default=1234)
    ap.add_argument("--repeat", type=int, default=3, help="grep/rg runs per size, the best is reported")
    ap.add_argument("--selection-runs", type=int, default=5)
    ap.add_argument("--timeout", type=float, default=3600, help="seconds allowed per rootrank run")
    ap.add_argument("--out-dir", type=Path, default=HERE / "out")
    ap.add_argument("--regen", action="store_true", help="regenerate logs even if a matching one exists")
    ap.add_argument("--no-rootrank", action="store_true", help="time grep/rg only")
    ap.add_argument("--no-styles", action="store_true",
                    help="skip the launcher-prefix matrix (a small 64-rank log per prefix style)")
    ap.add_argument("--max-bound", type=int, default=16,
                    help="counted repeats with a larger upper bound become unbounded in the ERE (default 16)")
    ap.add_argument("--other-generator", type=Path, default=os.environ.get("ROOTRANK_OTHER_GENERATOR") or None,
                    help="a folder with an independent generator (gen_log.py, rules.py, patterns.txt): its logs "
                         "of the same sizes are also measured against grep (env ROOTRANK_OTHER_GENERATOR)")
    ap.add_argument("--other-seed", type=int, default=11)
    ap.add_argument("--rootrank-repeat", type=int, default=1,
                    help="rootrank runs per engine on the other generator's logs; the median is reported")
    ap.add_argument("--exact-ere", action="store_true",
                    help="also time grep -E with the exact bounds (slow: GNU grep unrolls .{0,3000})")
    args = ap.parse_args(argv)
    sizes = args.size or [gen_log.parse_size("20MiB")]
    if args.quick and not args.size:
        sizes = [gen_log.parse_size("20MiB")]
    out = args.out_dir
    out.mkdir(parents=True, exist_ok=True)
    env_c = {**os.environ, "LC_ALL": "C"}
    tag = f"r{args.ranks}-{args.prefix}-f{args.fail_rank}-s{args.seed}"

    def say(msg: str) -> None:
        print(f"[bench_diagnose] {msg}", file=sys.stderr, flush=True)

    res: dict = {"config": {"ranks": args.ranks, "prefix": args.prefix, "fail_rank": args.fail_rank,
                            "seed": args.seed, "repeat": args.repeat, "sizes": sizes}, "sizes": []}

    if not args.no_rootrank:
        say(compile_bytecode())

    # the small log: same generator and options, smallest body
    small_path = out / f"small-{tag}.log"
    small_meta = ensure_log(small_path, 0, args.ranks, args.prefix, args.fail_rank, args.seed, args.regen)
    say(f"small log {small_meta['bytes'] / MiB:.1f} MiB")
    res["patterns"] = build_pattern_files(out, small_path, args.max_bound)
    say(f"patterns: {res['patterns']['converted']}/{res['patterns']['library_patterns']} converted")
    if not args.no_rootrank:
        warm(small_path)
        small = diagnose(small_path, out / f"small-{tag}.json", args.timeout)
        small["bytes"] = small_meta["bytes"]
        res["small"] = small
        say(f"small log: {small.get('rule')} rank {small.get('rank')} in {small['wall_s']:.2f}s")

    rg = shutil.which("rg")
    for size in sizes:
        path = out / f"job-{size}-{tag}.log"
        meta = ensure_log(path, size, args.ranks, args.prefix, args.fail_rank, args.seed, args.regen)
        say(f"{path.name}: {meta['bytes'] / MiB:.1f} MiB ({'reused' if meta['reused'] else 'generated at {:.0f} MB/s'.format(meta['gen_mb_per_s'])})")
        for _ in range(2):
            warm(path)
        tools: dict = {}
        tools["grep -E"] = best_of(args.repeat, ["grep", "-E", "-c", "-f", str(out / "patterns.ere"), str(path)],
                                   env=env_c)
        if args.exact_ere:
            tools["grep -E (exact bounds)"] = run_measured(
                ["grep", "-E", "-c", "-f", str(out / "patterns-exact-bounds.ere"), str(path)], env=env_c)
        tools["grep -F (literals)"] = best_of(args.repeat, ["grep", "-F", "-c", "-f", str(out / "literals.txt"),
                                                            str(path)], env=env_c)
        if rg:
            tools["rg --no-unicode"] = best_of(args.repeat, [rg, "--no-unicode", "-c", "-f", str(out / "patterns.rg"),
                                                             str(path)], env=env_c)
        else:
            tools["rg --no-unicode"] = {"skipped": "rg not installed"}
        if not args.no_rootrank:
            warm(path)
            say(f"rootrank diagnose {meta['bytes'] / MiB:.0f} MiB ...")
            tools["rootrank diagnose"] = diagnose(path, out / f"job-{size}-{tag}.json", args.timeout)
            if has_hyperscan():
                say(f"rootrank diagnose [fast: hyperscan] {meta['bytes'] / MiB:.0f} MiB ...")
                tools["rootrank diagnose [fast]"] = diagnose(path, out / f"job-{size}-{tag}-fast.json", args.timeout,
                                                             engine="hyperscan")
        for name, t in tools.items():
            if not t.get("skipped"):
                say(f"  {name}: {t['wall_s']:.2f}s, {meta['bytes'] / MB / t['wall_s']:.1f} MB/s, "
                    f"rss {fmt_rss(t['peak_rss_mib'])}" + (f", {t.get('rule')} rank {t.get('rank')}"
                                                         if name.startswith("rootrank") else ""))
        res["sizes"].append({"size_arg": size, "bytes": meta["bytes"], "path": str(path), "tools": tools,
                             "gen_mb_per_s": meta.get("gen_mb_per_s")})

    # selection-sized input: CLI with start-up, and in process
    if not args.no_rootrank:
        sel_path = out / f"selection-{tag}.txt"
        nbytes = selection_of(small_path, sel_path)
        n = args.selection_runs
        startup = [run_measured([*rootrank_cmd(), "--version"])["wall_s"] for _ in range(n)]
        cli = [run_measured([*rootrank_cmd(), "diagnose", "--format", "json", "--no-progress", str(sel_path)],
                            stdout_path=out / "selection.json")["wall_s"] for _ in range(n)]
        inproc = subprocess.run([sys.executable, "-c", INPROC, str(sel_path), str(max(n, 5))],
                                capture_output=True, text=True)
        try:
            ip = json.loads(inproc.stdout.strip().splitlines()[-1])
        except (ValueError, IndexError):
            ip = {"import_s": None, "first_s": None, "median_s": None, "rule": None, "rank": None,
                  "error": inproc.stderr[-400:]}
        res["selection"] = {"bytes": nbytes, "n": n, "startup_s": statistics.median(startup),
                            "cli_s": statistics.median(cli), "import_s": ip["import_s"],
                            "inproc_first_s": ip["first_s"], "inproc_s": ip["median_s"],
                            "rule": ip.get("rule"), "rank": ip.get("rank"), "error": ip.get("error")}
        times = [ip["median_s"] or 0.0]
        say(f"selection {nbytes / 1024:.0f} KiB: cli {statistics.median(cli) * 1000:.0f} ms, "
            f"in-process {statistics.median(times) * 1000:.1f} ms")

    if not args.no_rootrank and not args.no_styles:
        styles = []
        for style in gen_log.PREFIX_STYLES:
            ranks, fail = 64, args.fail_rank % 64
            spath = out / f"style-{style}-r{ranks}-f{fail}-s{args.seed}.log"
            smeta = ensure_log(spath, 0, ranks, style, fail, args.seed, args.regen)
            r = diagnose(spath, spath.with_suffix(".json"), args.timeout)
            styles.append({"prefix": style, "ranks": ranks, "fail_rank": fail, "bytes": smeta["bytes"],
                           **{k: r.get(k) for k in ("rule", "rank", "host", "collateral", "wall_s", "rc")}})
            say(f"style {style}: {r.get('rule')} rank {r.get('rank')} host {r.get('host')}")
        res["styles"] = styles

    if not args.no_rootrank and args.prefix == "rank":
        files_dir = out / f"per-rank-{tag}"
        count = split_per_rank(small_path, files_dir)
        # Under a low open-file limit: one log open at a time, however many there are.
        r = diagnose(files_dir, out / f"per-rank-{tag}.json", args.timeout, ulimit_files=64)
        res["per_rank_files"] = {"files": count, "bytes": sum(p.stat().st_size for p in files_dir.iterdir()),
                                 "fail_rank": args.fail_rank,
                                 **{k: r.get(k) for k in ("rule", "rank", "collateral", "wall_s", "peak_rss_mib",
                                                          "rc", "error")}}
        say(f"per-rank files: {count} files, {r.get('rule')} rank {r.get('rank')} in {r.get('wall_s', 0):.2f} s")

    if args.other_generator and not args.no_rootrank:
        res["other"] = other_generator(Path(args.other_generator), out, sizes, args.ranks, args.other_seed,
                                       args.repeat, args.rootrank_repeat, args.timeout, args.regen, say)

    (out / "bench_diagnose.json").write_text(json.dumps(res, indent=2, default=str))
    md = markdown(res)
    if res.get("other"):
        md += other_markdown(res["other"])
    (out / "bench_diagnose.md").write_text(md)
    print(md)
    return 0


if __name__ == "__main__":
    sys.exit(main())
