"""The `rootrank` command: diagnose, scan, check, explain, rules, lsp.

A thin adapter over the engine. Exit codes: 0 nothing wrong, 1 a failure (or finding) found, 2 bad
usage or unreadable input, printed as one line (set ROOTRANK_DEBUG=1 for a traceback). The language
server's libraries are imported only by `rootrank lsp`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from collections.abc import Callable, Sequence

from rootrank import __version__

EXIT_OK, EXIT_FOUND, EXIT_ERROR = 0, 1, 2


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> None:  # type: ignore[override]
        self.print_usage(sys.stderr)
        print(f"rootrank: error: {message}", file=sys.stderr)
        raise SystemExit(EXIT_ERROR)


def build_parser(argv: Sequence[str] = ()) -> argparse.ArgumentParser:
    """The whole command line; the checker's options are only built when `check` is the command, so
    every other command starts without importing the checker's rules."""
    parser = _Parser(prog="rootrank", description="Why did my training run fail? Diagnoses logs and checks "
                                                  "training code, entirely on this machine.")
    parser.add_argument("--version", action="version", version=f"rootrank {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    diagnose = sub.add_parser("diagnose", help="diagnose a failed run from its log(s), or '-' for stdin")
    diagnose.add_argument("paths", nargs="*", metavar="PATH", help="log files, directories of per-rank logs, or -")
    diagnose.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    diagnose.add_argument("--raw", action="store_true", help="do not redact tokens and passwords in the output")
    diagnose.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    diagnose.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    diagnose.add_argument("--ray", metavar="ADDRESS", help="search big files on a Ray cluster: its address, or "
                                                           "auto (needs rootrank[ray])")
    diagnose.set_defaults(run=_run_diagnose)

    scan = sub.add_parser("scan", help="scan a fleet of runs (a folder per job, or a log file each)")
    scan.add_argument("root", metavar="RUNS", help="folder whose entries are runs (or one run's folder or file)")
    scan.add_argument("--format", choices=("text", "jsonl"), default="text")
    scan.add_argument("--html", metavar="FILE", help="also write a self-contained HTML report with plots")
    scan.add_argument("--ray", metavar="ADDRESS", help="run as Ray tasks on a cluster: its address, or auto "
                                                       "(needs rootrank[ray])")
    scan.add_argument("--jobs", type=int, metavar="N", help="local processes (default: all cores)")
    scan.add_argument("--cache", metavar="FILE", help="resume cache (default: one per root in ~/.cache/rootrank)")
    scan.add_argument("--no-cache", action="store_true", help="read every run again, keep no cache")
    scan.add_argument("--no-progress", action="store_true", help="never show a progress bar")
    scan.set_defaults(run=_run_scan)

    check = sub.add_parser("check", help="check training code and configs for checkpointing mistakes")
    if "check" in argv:
        from rootrank.check import cli as check_cli

        check_cli.add_arguments(check)
        check.set_defaults(run=check_cli.run)

    explain = sub.add_parser("explain", help="show a failure entry's documentation, or what the checkpoint "
                                             "call at FILE:LINE does")
    explain.add_argument("rule", metavar="ID|FILE:LINE", help="entry id, e.g. memory.cuda-oom, or train.py:42")
    explain.add_argument("--python", default="", metavar="PATH",
                         help="with FILE:LINE: the interpreter whose library versions to describe "
                              "(default: the active virtual environment, else a .venv above the file)")
    explain.set_defaults(run=_run_explain)

    rules = sub.add_parser("rules", help="list every failure entry")
    rules.add_argument("--format", choices=("text", "json"), default="text")
    rules.set_defaults(run=_run_rules)

    lsp = sub.add_parser("lsp", help="start the language server on stdio")
    lsp.set_defaults(run=_run_lsp)
    return parser


def _run_diagnose(args: argparse.Namespace) -> int:
    from rootrank.diagnose import InputError, diagnose_paths

    paths = list(args.paths) or ["-"]
    if paths == ["-"] and sys.stdin.isatty():
        print("rootrank: reading the log from the terminal; paste it and press Ctrl-D (or pass a file)",
              file=sys.stderr)
    progress = _ProgressBar() if not args.no_progress and sys.stderr.isatty() else None
    try:
        if args.ray is not None:
            from rootrank.fleet.splitray import diagnose_on_ray

            diagnosis, _tasks = diagnose_on_ray(paths, args.ray, on_progress=progress)
        else:
            diagnosis = diagnose_paths(paths, on_progress=progress)
    except InputError as exc:
        print(f"rootrank: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ImportError as exc:
        print(f"rootrank: --ray needs Ray: pip install 'rootrank[ray]' ({exc})", file=sys.stderr)
        return EXIT_ERROR
    finally:
        if progress is not None:
            progress.close()
    if args.format == "json":
        from rootrank.render.json import diagnosis_to_json

        _write(json.dumps(diagnosis_to_json(diagnosis, raw=args.raw), indent=2) + "\n")
    elif args.format == "markdown":
        from rootrank.render.markdown import render_markdown

        _write(render_markdown(diagnosis, raw=args.raw))
    else:
        from rootrank.render.text import render_text

        color = args.color == "always" or (args.color == "auto" and sys.stdout.isatty()
                                           and "NO_COLOR" not in os.environ)
        _write(render_text(diagnosis, color=color, raw=args.raw))
    _report_library_problems()
    return EXIT_FOUND if diagnosis.failed else EXIT_OK


class _ProgressBar:
    """A one-line progress bar on a terminal's stderr for big inputs; silent for small ones and pipes."""

    MIN_BYTES = 32 << 20

    def __init__(self) -> None:
        import time

        self._clock = time.monotonic
        self._start = self._clock()
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        if total < self.MIN_BYTES:
            return
        elapsed = max(self._clock() - self._start, 1e-6)
        width = 30
        filled = int(width * done / total) if total else 0
        rate = done / elapsed / 1e6
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done / total:4.0%} "
                         f"{done >> 20}/{total >> 20} MiB {rate:.0f} MB/s")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _run_scan(args: argparse.Namespace) -> int:
    from pathlib import Path

    from rootrank.diagnose import InputError
    from rootrank.fleet import scan
    from rootrank.fleet.cache import default_cache_path
    from rootrank.fleet.views import summarize_fleet

    cache = None if args.no_cache else Path(args.cache) if args.cache else default_cache_path(args.root)
    progress = _RunsBar() if not args.no_progress and sys.stderr.isatty() else None
    try:
        result = scan(args.root, ray=args.ray, jobs=args.jobs, cache=cache, on_progress=progress)
    except InputError as exc:
        print(f"rootrank: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except ImportError as exc:
        print(f"rootrank: --ray needs Ray: pip install 'rootrank[ray]' ({exc})", file=sys.stderr)
        return EXIT_ERROR
    except ConnectionError as exc:
        print(f"rootrank: cannot reach the Ray cluster at {args.ray}: {str(exc).splitlines()[0] if str(exc) else exc!r}",
              file=sys.stderr)
        return EXIT_ERROR
    finally:
        if progress is not None:
            progress.close()
    summary = summarize_fleet(list(result.rows))
    if args.html:
        from rootrank.fleet.html import render_html

        try:
            Path(args.html).write_text(render_html(result.rows, summary), encoding="utf-8")
        except OSError as exc:
            print(f"rootrank: {args.html}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_ERROR
    if args.format == "jsonl":
        from rootrank.fleet.jsonl import render_jsonl

        _write(render_jsonl(result.rows))
    else:
        from rootrank.fleet.text import render_text as render_fleet

        _write(render_fleet(result.rows, summary))
    _report_library_problems()
    return EXIT_FOUND if summary.failed else EXIT_OK


class _RunsBar:
    """A one-line progress bar of runs scanned, on a terminal's stderr."""

    def __init__(self) -> None:
        self._shown = False

    def __call__(self, done: int, total: int) -> None:
        width = 30
        filled = int(width * done / total) if total else width
        sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} runs")
        sys.stderr.flush()
        self._shown = True

    def close(self) -> None:
        if self._shown:
            sys.stderr.write("\r\x1b[K")
            sys.stderr.flush()


def _report_library_problems() -> None:
    from rootrank.library import load_library

    for problem in load_library().problems:
        what = "entry skipped" if problem.skipped else "entry problem"
        print(f"rootrank: warning: {what}: {problem}", file=sys.stderr)


def _run_explain(args: argparse.Namespace) -> int:
    from rootrank.docs import explain
    from rootrank.library import load_library

    text = explain(args.rule)
    if text is None and _FILE_LINE.match(args.rule):
        return _explain_call_at(args.rule, args.python)
    if text is None:
        ids = sorted(load_library().entries)
        close = [i for i in ids if args.rule in i or i.split(".")[-1] in args.rule]
        hint = f"; did you mean {', '.join(close[:5])}?" if close else "; `rootrank rules` lists them"
        print(f"rootrank: no entry {args.rule!r}{hint}", file=sys.stderr)
        return EXIT_ERROR
    _write(text)
    return EXIT_OK


_FILE_LINE = re.compile(r"^(?P<path>.+):(?P<line>\d+)(?::\d+)?$")


def _explain_call_at(where: str, python: str) -> int:
    """`rootrank explain train.py:42`: what each checkpoint-related call on that line does, with the
    library versions of the environment the file runs in (the editor's hover, in a terminal)."""
    from pathlib import Path

    from rootrank.check.calls import read_file
    from rootrank.check.explain_call import explain_call, explanation_markdown
    from rootrank.environment import find_environment

    match = _FILE_LINE.match(where)
    assert match is not None
    path, line = Path(match.group("path")), int(match.group("line"))
    try:
        source = path.read_bytes().decode("utf-8-sig")
    except (OSError, UnicodeDecodeError) as exc:
        print(f"rootrank: cannot read {path}: {getattr(exc, 'strerror', None) or exc}", file=sys.stderr)
        return EXIT_ERROR
    facts = read_file(source)
    if facts is None:
        print(f"rootrank: {path} is not valid Python (it does not parse)", file=sys.stderr)
        return EXIT_ERROR
    calls = sorted((c for c in facts.calls if c.line <= line <= c.end_line), key=lambda c: (c.line, c.column))
    if not calls:
        print(f"rootrank: no checkpoint, compile, DDP or FSDP call on {path}:{line}", file=sys.stderr)
        return EXIT_ERROR
    roots = tuple(str(p) for p in [path.resolve().parent, *path.resolve().parent.parents][:12])
    env = find_environment(python, roots)
    _write("\n\n---\n\n".join(explanation_markdown(explain_call(c, facts, env)) for c in calls) + "\n")
    return EXIT_OK


def _run_rules(args: argparse.Namespace) -> int:
    from rootrank.library import load_library

    library = load_library()
    entries = sorted(library.entries.values(), key=lambda e: e.id)
    if args.format == "json":
        data = [{"id": e.id, "title": e.title, "category": e.category, "severity": e.severity.value,
                 "role": e.role.value, "summary": e.summary, "fix": e.fix, "verify": e.verify,
                 "references": list(e.references), "patterns": len(e.patterns),
                 "has_code_check": bool(e.check)} for e in entries]
        _write(json.dumps({"schema": "rootrank.rules/1", "rules": data}, indent=2) + "\n")
    else:
        width = max((len(e.id) for e in entries), default=10)
        _write("".join(f"{e.id:<{width}}  {e.severity.value:<7}  {e.role.value:<7}  {e.title}\n" for e in entries))
    _report_library_problems()
    return EXIT_OK


def _run_lsp(args: argparse.Namespace) -> int:
    import gc

    # As in `python -m rootrank.lsp`: no collections while lsprotocol's many objects are created;
    # the server freezes them and turns the collector back on before serving.
    gc.disable()
    from rootrank.lsp.server import main as lsp_main

    lsp_main()
    return EXIT_OK


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (e.g. `head`) went away; that is not an error of ours.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    run: Callable[[argparse.Namespace], int] | None = getattr(args, "run", None)
    if run is None:
        parser.print_help(sys.stderr)
        return EXIT_ERROR
    try:
        return run(args)
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        if os.environ.get("ROOTRANK_DEBUG"):
            raise
        print(f"rootrank: internal error: {type(exc).__name__}: {exc} (set ROOTRANK_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
