"""The `rootrank` command: diagnose, scan, check, measure, explain, rules, lsp.

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

    measure = sub.add_parser("measure", help="measure what activation checkpointing does for a model (runs it)")
    measure.add_argument("target", nargs="?", metavar="MODULE:FACTORY",
                         help="a function returning (model, example_batch), e.g. mypkg.model:build")
    measure.add_argument("--hf-config", metavar="PATH", help="a transformers config.json (built on meta; never downloads)")
    measure.add_argument("--batch-size", type=int, default=1, help="batch size for --hf-config (default 1)")
    measure.add_argument("--seq-len", type=int, default=512, help="sequence length for --hf-config (default 512)")
    measure.add_argument("--device", choices=("meta", "cpu", "cuda"), default=None,
                         help="where to run: meta (no memory, default for --hf-config), cpu (default for a "
                              "factory), cuda (also real peak memory and step time)")
    measure.add_argument("--dtype", help="parameter dtype for --hf-config (default: the config's)")
    measure.add_argument("--budget", metavar="SIZE", help="activation memory to fit, e.g. 20GiB")
    measure.add_argument("--python", metavar="PATH", help="the interpreter with torch (default: the active "
                                                          "virtualenv, ./.venv, then this one)")
    measure.add_argument("--format", choices=("text", "json", "markdown"), default="text")
    measure.set_defaults(run=_run_measure)

    explain = sub.add_parser("explain", help="show a failure entry's documentation, or what the checkpoint "
                                             "call at FILE:LINE does")
    explain.add_argument("rule", metavar="ID|FILE:LINE", help="entry id, e.g. memory.cuda-oom, or train.py:42")
    explain.add_argument("--python", default="", metavar="PATH",
                         help="the interpreter whose library versions to describe (an entry's Versions "
                              "section, or FILE:LINE); default: the active virtual environment, else a .venv "
                              "above the file or the current folder, else rootrank's own interpreter")
    explain.set_defaults(run=_run_explain)

    rules = sub.add_parser("rules", help="list every failure entry")
    rules.add_argument("--format", choices=("text", "json"), default="text")
    rules.set_defaults(run=_run_rules)

    watch = sub.add_parser("watch", help="run a job (rootrank watch -- CMD ...) or follow its log files, and "
                                         "name the cause or the hung rank while it runs")
    watch.add_argument("paths", nargs="*", metavar="PATH", help="log files or folders to follow (like tail -F); - reads the job's output from stdin")
    watch.add_argument("--stall", type=float, metavar="SECONDS",
                       help="flag a stall after this long without progress (default: 5x the usual interval, "
                            "at least 60 s)")
    watch.add_argument("--kill-on-stall", action="store_true", help="stop the job once a stall is reported")
    watch.add_argument("--out", metavar="DIR", help="where stacks and reports go (default: a temporary folder)")
    watch.add_argument("--log", metavar="FILE", help="also save the job's output (both streams) to FILE")
    watch.add_argument("--pid", type=int, action="append", default=[], metavar="PID",
                       help="following files: the job's launcher pid, for stacks (default: the ranks found here)")
    watch.add_argument("--echo", action="store_true", help="following files: print what they gain")
    watch.add_argument("--color", choices=("auto", "always", "never"), default="auto")
    watch.add_argument("--label", metavar="TEXT", help="reading stdin: the command whose output it is (shown in "
                                                       "the editor's status bar)")
    watch.set_defaults(run=_run_watch, job=_after_dashes(argv))

    lsp = sub.add_parser("lsp", help="start the language server on stdio")
    lsp.set_defaults(run=_run_lsp)
    return parser


def _run_diagnose(args: argparse.Namespace) -> int:
    from rootrank.diagnose import InputError, diagnose_paths

    paths = list(args.paths) or ["-"]
    if paths == ["-"] and sys.stdin.isatty():
        print("rootrank: reading the log from the terminal; paste it and press Ctrl-D (or pass a file)",
              file=sys.stderr)
    empty = _empty_library()
    if empty:
        print(f"rootrank: {empty}", file=sys.stderr)
        return EXIT_ERROR
    progress = _ProgressBar() if not args.no_progress and sys.stderr.isatty() else None
    try:
        if args.ray is not None:
            from rootrank.fleet.splitray import diagnose_on_ray

            diagnosis, _tasks = diagnose_on_ray(paths, args.ray, on_progress=progress)
        else:
            diagnosis = diagnose_paths(paths, on_progress=progress)
    except InputError as exc:
        from rootrank.render.common import terminal_safe

        print(f"rootrank: {terminal_safe(str(exc))}", file=sys.stderr)
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


def _run_measure(args: argparse.Namespace) -> int:
    from rootrank.measure import MeasureError, MeasureRequest, find_interpreter, measure, parse_bytes
    from rootrank.measure.render import measurement_to_json, render_markdown, render_text

    if bool(args.target) == bool(args.hf_config):
        print("rootrank: measure takes MODULE:FACTORY or --hf-config PATH (one of them)", file=sys.stderr)
        return EXIT_ERROR
    if args.batch_size < 1 or args.seq_len < 1:
        print("rootrank: --batch-size and --seq-len must be positive", file=sys.stderr)
        return EXIT_ERROR
    if args.hf_config and not os.path.exists(args.hf_config):
        print(f"rootrank: no such config: {args.hf_config}", file=sys.stderr)
        return EXIT_ERROR
    try:
        budget = parse_bytes(args.budget) if args.budget else None
    except ValueError:
        print(f"rootrank: --budget {args.budget!r} is not a size (e.g. 20GiB, 512MiB)", file=sys.stderr)
        return EXIT_ERROR
    device = args.device or ("meta" if args.hf_config else "cpu")
    request = MeasureRequest(target=args.target, hf_config=args.hf_config, batch_size=args.batch_size,
                             seq_len=args.seq_len, device=device, dtype=args.dtype, cwd=os.getcwd())
    python = find_interpreter(args.python, os.getcwd())
    shown = sys.stderr.isatty()

    def progress(message: str, done: int, total: int) -> None:
        if shown:
            count = f" [{done}/{total}]" if total else ""
            sys.stderr.write(f"\r\x1b[Kmeasuring{count} {message}"[:200])
            sys.stderr.flush()

    try:
        result = measure(request, python=python, budget=budget, on_progress=progress)
    except MeasureError as exc:
        if shown:
            sys.stderr.write("\r\x1b[K")
        print(f"rootrank: {exc}", file=sys.stderr)
        if exc.detail and exc.kind == "factory-raised":
            print(exc.detail, file=sys.stderr)
        return EXIT_ERROR
    if shown:
        sys.stderr.write("\r\x1b[K")
    if args.format == "json":
        _write(json.dumps(measurement_to_json(result), indent=2) + "\n")
    elif args.format == "markdown":
        _write(render_markdown(result))
    else:
        _write(render_text(result))
    return EXIT_FOUND if result.findings else EXIT_OK


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


def _empty_library() -> str:
    """Why there is no failure library to diagnose with (a missing or empty folder), or ""."""
    from rootrank.library import load_library, rules_dir

    if load_library().entries:
        return ""
    where = rules_dir()
    told = " (ROOTRANK_RULES)" if os.environ.get("ROOTRANK_RULES") else ""
    if not where.is_dir():
        return f"no failure library: {where}{told} is not a folder"
    return f"no failure library: {where}{told} holds no valid entry"


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
        from rootrank import atomic
        from rootrank.fleet.html import render_html

        try:  # whole or not at all: a report cut by a full disk would read as a finished one
            atomic.write_new(args.html, render_html(result.rows, summary).encode("utf-8"))
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

    if _FILE_LINE.match(args.rule) and load_library().get(args.rule) is None:
        return _explain_call_at(args.rule, args.python)
    from rootrank.environment import NoEnvironmentError, find_environment, roots_above

    try:  # the Versions section marks the rows for the versions installed where rootrank is run
        installed = find_environment(args.python, roots_above(".")).versions
    except NoEnvironmentError as error:
        print(f"rootrank: {error}", file=sys.stderr)
        return EXIT_ERROR
    text = explain(args.rule, installed=installed)
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
    from rootrank.environment import NoEnvironmentError, find_environment, roots_above

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
    try:
        env = find_environment(python, roots_above(path))
    except NoEnvironmentError as error:
        print(f"rootrank: {error}", file=sys.stderr)
        return EXIT_ERROR
    _write("\n\n---\n\n".join(explanation_markdown(explain_call(c, facts, env)) for c in calls) + "\n")
    return EXIT_OK


def _run_rules(args: argparse.Namespace) -> int:
    from rootrank.library import load_library

    library = load_library()
    empty = _empty_library()
    if empty:
        _report_library_problems()
        print(f"rootrank: {empty}", file=sys.stderr)
        return EXIT_ERROR
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


def _after_dashes(argv: Sequence[str]) -> list[str] | None:
    """The job's command line of `rootrank watch [options] -- CMD ...`, None without `--`."""
    argv = list(argv)
    if "watch" not in argv or "--" not in argv[argv.index("watch"):]:
        return None
    return argv[argv.index("--", argv.index("watch")) + 1:]


def _run_watch(args: argparse.Namespace) -> int:
    from rootrank.watch.cli import run

    return run(args)


def _run_lsp(args: argparse.Namespace) -> int:
    import gc
    import signal

    signal.signal(signal.SIGINT, signal.SIG_DFL)  # as in `python -m rootrank.lsp`: Ctrl-C ends it quietly

    # As in `python -m rootrank.lsp`: no collections while lsprotocol's many objects are created;
    # the server freezes them and turns the collector back on before serving.
    gc.disable()
    from rootrank.lsp.server import main as lsp_main

    lsp_main()
    return EXIT_OK


class OutputError(Exception):
    """The output cannot be written (standard output closed, a full disk); the message is one line."""


def _write(text: str) -> None:
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader (e.g. `head`) went away; that is not an error of ours.
        _silence_stdout()
    except (OSError, ValueError) as exc:  # ValueError: the stream was closed under us
        _silence_stdout()
        raise OutputError(f"cannot write the output: {getattr(exc, 'strerror', None) or exc}") from exc


def _silence_stdout() -> None:
    """Point standard output at /dev/null, so the interpreter's last flush at exit finds nothing to fail on."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


def _closed_stdio() -> str:
    """Which standard stream the command cannot run without is closed (started with `>&-`), or ""."""
    if sys.stderr is None:
        sys.stderr = open(os.devnull, "w")  # noqa: SIM115 - nowhere to say anything; stay quiet
    return "standard output is closed" if sys.stdout is None else ""


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    closed = _closed_stdio()
    if closed:
        print(f"rootrank: {closed}", file=sys.stderr)
        return EXIT_ERROR
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
    except OutputError as exc:
        print(f"rootrank: {exc}", file=sys.stderr)
        return EXIT_ERROR
    except Exception as exc:
        if os.environ.get("ROOTRANK_DEBUG"):
            raise
        print(f"rootrank: internal error: {type(exc).__name__}: {exc} (set ROOTRANK_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_ERROR


if __name__ == "__main__":
    sys.exit(main())
