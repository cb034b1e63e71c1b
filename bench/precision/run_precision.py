"""Precision of `rootrank check` on real training codebases: every finding judged by a person.

    python bench/precision/run_precision.py --mirrors DIR [--python PATH] [--rootrank CMD]

DIR holds a bare git directory per repository of repos.yaml, named `owner+name/repo` (any git clone's
`.git` works too). Each repository is read at its pinned commit: the files that mention checkpointing
(Python, notebooks, JSON/YAML configs, shell launchers) are extracted to a temporary folder and
checked with `rootrank check --format json`. Every finding is looked up in judgments.yaml by
`repo path rule line-text` (the stripped source line, so a judgment survives lines moving):
  bug     a real defect (the run fails, trains wrong, or wastes the memory it meant to save)
  accept  right, and a maintainer would accept the change (style, an explicit default, a warning silenced)
  fp      false positive: the finding's claim does not hold for this code
Findings without a judgment are listed as `unjudged`; the table counts them as not accepted.
Nothing here fetches anything: the repositories must already be on disk.
"""

from __future__ import annotations

import argparse
import json
import shlex
import subprocess
import sys
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

import yaml

HERE = Path(__file__).resolve().parent
SUFFIXES = (".py", ".ipynb", ".json", ".yaml", ".yml", ".sh")
KEYWORDS = (b"checkpoint", b"recompute")


def git(git_dir: Path, *args: str) -> bytes:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], check=True, capture_output=True).stdout


def extract(git_dir: Path, commit: str, into: Path) -> int:
    names = [n for n in git(git_dir, "ls-tree", "-r", "--name-only", commit).decode().splitlines()
             if n.lower().endswith(SUFFIXES)]
    count = 0
    for name in names:
        try:
            data = git(git_dir, "show", f"{commit}:{name}")
        except subprocess.CalledProcessError:
            continue  # a blob the snapshot left out (large files)
        if len(data) > 2_000_000 or not any(k in data for k in KEYWORDS):
            continue
        target = into / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
        count += 1
    return count


def line_text(root: Path, finding: dict) -> str:
    path = root / finding["path"]
    try:
        if path.suffix == ".ipynb":
            cells = json.loads(path.read_text(encoding="utf-8"))["cells"]
            source = cells[finding["cell"] - 1]["source"]
            lines = ("".join(source) if isinstance(source, list) else source).splitlines()
        else:
            lines = path.read_text(encoding="utf-8", errors="replace").splitlines()
        return lines[finding["line"] - 1].strip()
    except (OSError, IndexError, KeyError, ValueError):
        return ""


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--mirrors", type=Path, required=True)
    parser.add_argument("--rootrank", default=f"{sys.executable} -m rootrank.cli")
    parser.add_argument("--python", default="", metavar="PATH",
                        help="the interpreter whose library versions the check assumes (`rootrank check --python`); "
                             "the judgments were made for transformers 4.57")
    parser.add_argument("--write-table", action="store_true", help="print the Markdown table for BENCHMARKS.md")
    args = parser.parse_args()
    repos = yaml.safe_load((HERE / "repos.yaml").read_text(encoding="utf-8"))
    judgments = yaml.safe_load((HERE / "judgments.yaml").read_text(encoding="utf-8")) or []
    verdicts = {(j["repo"], j["path"], j["rule"], j["line"]): j for j in judgments}
    per_rule: dict[str, Counter[str]] = defaultdict(Counter)
    files = 0
    for item in repos:
        git_dir = args.mirrors / item["repo"].replace("/", "+") / "repo"
        if not git_dir.exists():
            print(f"missing {git_dir}: fetch {item['repo']} first", file=sys.stderr)
            return 2
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            files += extract(git_dir, item["commit"], root)
            versions = ["--python", args.python] if args.python else []
            out = subprocess.run([*shlex.split(args.rootrank), "check", *versions, "--format", "json", "."], cwd=root,
                                 capture_output=True, text=True, check=False)
            if out.returncode not in (0, 1):
                print(f"{item['repo']}: rootrank check failed: {out.stderr.strip()}", file=sys.stderr)
                return 2
            for finding in json.loads(out.stdout)["findings"]:
                path = finding["path"].removeprefix("./")
                text = line_text(root, {**finding, "path": path})
                judged = verdicts.get((item["repo"], path, finding["rule"], text))
                verdict = judged["verdict"] if judged else "unjudged"
                per_rule[f"{finding['rule']} ({finding['severity']})"][verdict] += 1
                where = f"{path}:" + (f"cell {finding['cell']}:" if "cell" in finding else "") + str(finding["line"])
                print(f"{verdict:9} {item['repo']} {where} {finding['rule']} [{finding['severity']}] | {text}")
    print(f"\n{len(repos)} repositories, {files} files that mention checkpointing")
    rows = ["| rule (severity) | findings | bug | accept | fp | unjudged | accepted |", "|---|---|---|---|---|---|---|"]
    for rule in sorted(per_rule):
        c = per_rule[rule]
        total = sum(c.values())
        rows.append(f"| `{rule}` | {total} | {c['bug']} | {c['accept']} | {c['fp']} | {c['unjudged']} | "
                    f"{(c['bug'] + c['accept']) / total:.0%} |")
    print("\n".join(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
