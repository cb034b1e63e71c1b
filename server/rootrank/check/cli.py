"""The `rootrank check` front end: arguments, file discovery, `--fix`, and output formats.

`add_arguments` and `run` are what the top-level CLI wires to `rootrank check`. Output formats are a
seam: each is one function `(results) -> str` in `FORMATS` (text like a linter, JSON with schema
`rootrank.check/1`, SARIF 2.1.0). Exit codes: 0 clean, 1 findings, 2 bad usage or unreadable input,
including a file that was skipped rather than parsed (over the parse cap, or a YAML alias bomb: one line
each on stderr, see check/bounds.py; the other files are still checked and reported).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from rootrank import __version__
from rootrank.check import CONFIG_SUFFIXES, NOTEBOOK_SUFFIX, SKIPPED, CheckOptions, check_source, fix_source
from rootrank.check.fixes import ordered_fixes, preferred
from rootrank.check.options import matches
from rootrank.environment import Environment, NoEnvironmentError, find_environment, roots_above
from rootrank.model import Applicability, Finding, Fix, plain

LOG = logging.getLogger(__name__)
EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2
SCHEMA = "rootrank.check/1"
SUFFIXES = (".py", NOTEBOOK_SUFFIX, *CONFIG_SUFFIXES)
SKIP_DIRS = frozenset({".git", ".hg", ".venv", "venv", "node_modules", "__pycache__", ".mypy_cache", ".ruff_cache",
                       ".pytest_cache", ".tox", ".nox", "build", "dist", "site-packages"})


class InputError(Exception):
    """A path that cannot be read: reported as one line, exit code 2."""


@dataclass
class Results:
    findings: list[Finding] = field(default_factory=list)
    fixed: int = 0
    errors: list[str] = field(default_factory=list)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", metavar="PATH", default=["."],
                        help="Python files, notebooks (*.ipynb), configs (*.json, *.yaml, *.yml, *.sh) or "
                             "directories (default: .)")
    parser.add_argument("--format", choices=sorted(FORMATS), default="text", dest="output_format")
    parser.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    parser.add_argument("--unsafe-fixes", action="store_true",
                        help="consider unsafe fixes too: --fix then applies them (as in ruff)")
    parser.add_argument("--select", action="append", default=[], metavar="IDS",
                        help="only these ids or prefixes, comma-separated (e.g. checkpoint.reentrant)")
    parser.add_argument("--ignore", action="append", default=[], metavar="IDS",
                        help="skip these ids or prefixes, comma-separated")
    parser.add_argument("--no-noqa", action="store_true", help="ignore `# noqa` comments")
    parser.add_argument("--stdin-filename", metavar="NAME", help="the file name for source read from '-'")
    parser.add_argument("--python", metavar="PATH", default="",
                        help="the interpreter (or environment folder) the code runs with, whose library versions "
                             "the findings assume; default: the active virtual environment, else a .venv next to "
                             "or above the file, else rootrank's own interpreter (package metadata only)")


def run(args: argparse.Namespace) -> int:
    options = CheckOptions(select=_ids(args.select), ignore=_ids(args.ignore), noqa=not args.no_noqa)
    python = getattr(args, "python", "") or ""
    try:
        environments = Environments(python)
        environments.for_path(".")  # a bad --python is bad usage, said before anything is checked
    except NoEnvironmentError as error:
        print(f"rootrank: {error}", file=sys.stderr)
        return EXIT_ERROR
    unsafe = bool(getattr(args, "unsafe_fixes", False))
    fix = bool(getattr(args, "fix", False))
    results = Results()
    sources: dict[str, str] = {}
    try:
        paths = list(discover(args.paths or ["."]))
    except InputError as error:
        print(f"rootrank: {error}", file=sys.stderr)
        return EXIT_ERROR
    config_options = _config_options(paths)
    for path in paths:
        name = (args.stdin_filename or "-") if path == "-" else path
        file_options = config_options(name, environments.options(options, "." if path == "-" else path))
        try:
            source = read_source(path)
            if fix and path != "-":
                source, count = _fix_file(path, source, file_options, unsafe)
                results.fixed += count
        except InputError as error:
            results.errors.append(str(error))
            continue
        sources[name] = source
        for finding in check_source(source, name, file_options):
            if finding.rule == SKIPPED:  # not a finding in the code: the file could not be checked
                results.errors.append(f"{name}: {finding.message}")
            else:
                results.findings.append(finding)
    results.findings.extend(_cross_file(sources, options))
    order = {name: i for i, name in enumerate(sources)}
    results.findings.sort(key=lambda f: (order.get(f.path, len(order)), f.line, f.column, f.rule))
    formatter = FORMATS[args.output_format]
    output = formatter(results)
    if output:
        sys.stdout.write(output if output.endswith("\n") else output + "\n")
    for problem in results.errors:
        print(f"rootrank: {problem}", file=sys.stderr)
    if args.output_format == "text":
        _summary(results, fix, unsafe)
        environments.summary(results.findings)
    if results.errors:
        return EXIT_ERROR
    return EXIT_FOUND if results.findings else EXIT_OK


class Environments:
    """The environment (and so the library versions) each checked file runs with, found once per folder."""

    def __init__(self, python: str) -> None:
        self.python = python
        self.used: dict[str, Environment] = {}

    def for_path(self, path: str) -> Environment:
        roots = roots_above(path)
        env = find_environment(self.python, roots)
        self.used.setdefault(env.where, env)
        return env

    def options(self, options: CheckOptions, path: str) -> CheckOptions:
        env = self.for_path(path)
        return dataclasses.replace(options, versions=tuple(sorted(env.versions.items())))

    def summary(self, findings: list[Finding]) -> None:
        """One stderr line per environment whose versions a finding assumed (text output)."""
        if any(f.assumes for f in findings):
            for env in self.used.values():
                print(f"Versions assumed: {env.describe()}.", file=sys.stderr)


def _cross_file(sources: dict[str, str], options: CheckOptions) -> list[Finding]:
    """Findings that need two files of the run at once (an Accelerate config and the training script)."""
    from rootrank.check import filter_findings
    from rootrank.check.configs import cross_file
    from rootrank.check.source import Locator

    try:
        found = cross_file(sources)
    except Exception:  # as for single files: a bug of ours is logged, not raised
        LOG.exception("rootrank: the cross-file check failed")
        return []
    return [f for f in found if filter_findings([f], Locator(sources[f.path]), options, f.path)]


def _config_options(paths: list[str]) -> Callable[[str, CheckOptions], CheckOptions]:
    """Per-file options for configs: without the findings (and fixes) that assume the Trainer reads them when
    the checked Python reads them into an argument class of the project's own (configs.own_config_reader)."""
    from rootrank.check.configs import READER_DEPENDENT, own_config_reader

    def unchanged(name: str, options: CheckOptions) -> CheckOptions:
        return options

    if not any(p.lower().endswith((".yaml", ".yml", ".json")) for p in paths):
        return unchanged
    python: dict[str, str] = {}
    for path in paths:
        if path != "-" and path.endswith(".py"):
            try:
                python[path] = read_source(path)
            except InputError:
                continue  # reported when the file itself is checked
    if not own_config_reader(python):
        return unchanged

    def without(name: str, options: CheckOptions) -> CheckOptions:
        if not name.lower().endswith((".yaml", ".yml", ".json")):
            return options
        return dataclasses.replace(options, ignore=(*options.ignore, *sorted(READER_DEPENDENT)))
    return without


def _ids(values: list[str]) -> tuple[str, ...]:
    return tuple(part.strip() for value in values for part in value.split(",") if part.strip())


def discover(paths: list[str]) -> Iterator[str]:
    """Files to check, in a stable order: named files as given, directories walked for known suffixes."""
    for path in paths:
        if path == "-":
            yield path
        elif os.path.isdir(path):
            for root, dirs, files in os.walk(path):
                dirs[:] = sorted(d for d in dirs if d not in SKIP_DIRS and not d.startswith("."))
                for name in sorted(files):
                    full = os.path.join(root, name)
                    # A FIFO or device named like a source would block or never end: only regular files.
                    if name.lower().endswith(SUFFIXES) and os.path.isfile(full):
                        yield full
        elif os.path.isfile(path):
            yield path
        elif os.path.exists(path):
            raise InputError(f"{path}: not a regular file")
        else:
            raise InputError(f"{path}: no such file or directory")


MAX_SOURCE_BYTES = 64 << 20


def read_source(path: str) -> str:
    try:
        if path == "-":
            data = sys.stdin.buffer.read(MAX_SOURCE_BYTES + 1)
        else:
            with open(path, "rb") as handle:
                data = handle.read(MAX_SOURCE_BYTES + 1)
    except OSError as error:
        raise InputError(f"{path}: cannot read: {error.strerror or error}") from None
    if len(data) > MAX_SOURCE_BYTES:
        raise InputError(f"{path}: larger than {MAX_SOURCE_BYTES >> 20} MiB; not a training script")
    try:
        return data.decode("utf-8-sig")
    except UnicodeDecodeError as bad:
        raise InputError(f"{path}: not UTF-8 (byte 0x{data[bad.start]:02x} at offset {bad.start}); "
                         "save it as UTF-8 to check it") from None


def _fix_file(path: str, source: str, options: CheckOptions, unsafe: bool) -> tuple[str, int]:
    from rootrank import atomic

    original = source
    source, count = fix_source(source, path, options, unsafe)
    if source != original:
        # Never overwrite an edit saved while we were checking: fix only the text we read, and only if
        # the file is still that text right before the new one replaces it (rootrank.atomic).
        try:
            snap = atomic.snapshot(path)
        except OSError as error:
            raise InputError(f"{path}: cannot read it again to write the fixes: {error.strerror or error}") from None
        bom = snap.data.startswith(BOM)
        if snap.data[len(BOM) if bom else 0:] != original.encode("utf-8"):
            raise InputError(f"{path}: changed while being checked; not fixed (run again)")
        try:
            atomic.replace(snap, (BOM if bom else b"") + source.encode("utf-8"), shown=path)
        except atomic.WriteError as error:
            raise InputError(error.strerror or str(error)) from None
    return source, count


BOM = b"\xef\xbb\xbf"


def _applicable(finding: Finding, unsafe: bool) -> bool:
    from rootrank.check.fixes import choose

    return choose(finding, unsafe) is not None


def _summary(results: Results, fix: bool, unsafe_fixes: bool) -> None:
    safe = sum(1 for f in results.findings if _applicable(f, False))
    unsafe = sum(1 for f in results.findings if _applicable(f, True)) - safe
    parts = [f"Found {len(results.findings)} finding{'s' if len(results.findings) != 1 else ''}"]
    if fix and results.fixed:
        parts.append(f"fixed {results.fixed}")
    if unsafe_fixes and safe + unsafe:
        parts.append(f"{safe + unsafe} fixable with --fix --unsafe-fixes")
    else:
        if safe:
            parts.append(f"{safe} fixable with --fix")
        if unsafe:
            parts.append(f"{unsafe} more with --fix --unsafe-fixes")
    if results.findings or results.fixed:
        print(", ".join(parts) + ".", file=sys.stderr)


# ---------------------------------------------------------------------- output formats


def format_text(results: Results) -> str:
    """`path:line:col: id message`, and the preferred fix as ruff shows it: `[*]` when `--fix` applies it,
    `[unsafe fix]` when only `--fix --unsafe-fixes` does; then the versions the finding assumed."""
    lines = []
    for f in results.findings:
        fix = preferred(f)
        mark = "" if fix is None else (" [*]" if fix.applicability is Applicability.SAFE else " [unsafe fix]")
        where = f"{f.path}:{f.line}:{f.column}" if f.cell is None else f"{f.path}:cell {f.cell}:{f.line}:{f.column}"
        assumed = f" [{', '.join(f.assumes)}]" if f.assumes else ""
        lines.append(f"{where}: {f.rule}{mark} {f.message}{assumed}\n")
    return "".join(lines)


def finding_to_json(finding: Finding) -> dict[str, Any]:
    data: dict[str, Any] = {
        "rule": finding.rule, "severity": finding.severity.value, "path": finding.path,
        "line": finding.line, "column": finding.column, "end_line": finding.end_line,
        "end_column": finding.end_column, "message": finding.message,
        # One fix model for every output (check/fixes.py): `fix` is the preferred fix, the one `--fix`
        # (safe) or `--fix --unsafe-fixes` applies; `fixes` lists all of them, preferred first.
        "fix": _fix_to_json(first) if (first := preferred(finding)) is not None else None,
        "fixes": [_fix_to_json(f) for f in ordered_fixes(finding)],
    }
    if finding.assumes:
        data["assumes"] = list(finding.assumes)
    if finding.cell is not None:
        data["cell"] = finding.cell  # a notebook: `line`/`end_line` count inside that cell
    if len(finding.fixes) > 1:
        data["alternative_fixes"] = [_fix_to_json(f) for f in ordered_fixes(finding)[1:]]
    return data


def _fix_to_json(fix: Fix) -> dict[str, Any]:
    return {"applicability": fix.applicability.value, "title": fix.title, "edits": [plain(e) for e in fix.edits]}


def format_json(results: Results) -> str:
    return json.dumps({"schema": SCHEMA, "findings": [finding_to_json(f) for f in results.findings]}, indent=2)


_SARIF_LEVEL = {"error": "error", "warning": "warning", "info": "note"}


def format_sarif(results: Results) -> str:
    from rootrank.check.registry import RULES

    ids = sorted({f.rule for f in results.findings} | set(RULES))
    sarif_rules = [{"id": rule_id, "shortDescription": {"text": _title(rule_id)},
                    "helpUri": f"https://github.com/rootrank/rootrank/blob/main/docs/rules/{rule_id}.md"}
                   for rule_id in ids]
    index = {rule_id: i for i, rule_id in enumerate(ids)}
    sarif_results = []
    for finding in results.findings:
        uri = finding.path.replace(os.sep, "/")
        result: dict[str, Any] = {
            "ruleId": finding.rule, "ruleIndex": index[finding.rule],
            "level": _SARIF_LEVEL[finding.severity.value], "message": {"text": finding.message},
            **({"properties": {"assumes": list(finding.assumes)}} if finding.assumes else {}),
            "locations": [{"physicalLocation": {"artifactLocation": {"uri": uri}, "region": _region(
                finding.line, finding.column, finding.end_line, finding.end_column)}}],
        }
        if finding.fixes:
            result["fixes"] = [{
                "description": {"text": f"{fix.title} [{fix.applicability.value}]"},
                "artifactChanges": [{"artifactLocation": {"uri": uri}, "replacements": [
                    {"deletedRegion": _region(e.line, e.column, e.end_line, e.end_column),
                     "insertedContent": {"text": e.text}} for e in fix.edits]}],
            } for fix in ordered_fixes(finding)]
        sarif_results.append(result)
    log = {
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json", "version": "2.1.0",
        "runs": [{"tool": {"driver": {"name": "rootrank", "version": __version__,
                                      "informationUri": "https://github.com/rootrank/rootrank",
                                      "rules": sarif_rules}},
                  "results": sarif_results}],
    }
    return json.dumps(log, indent=2)


def _region(line: int, column: int, end_line: int, end_column: int) -> dict[str, int]:
    return {"startLine": line, "startColumn": column, "endLine": end_line, "endColumn": end_column}


def _title(rule_id: str) -> str:
    try:
        from rootrank.library import load_library

        entry = load_library().get(rule_id)
    except Exception:
        entry = None
    return entry.title if entry is not None else rule_id


FORMATS: dict[str, Callable[[Results], str]] = {"text": format_text, "json": format_json, "sarif": format_sarif}

__all__ = ["EXIT_ERROR", "EXIT_FOUND", "EXIT_OK", "FORMATS", "add_arguments", "matches", "run"]
