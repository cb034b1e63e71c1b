"""`rootrank check`: find activation-checkpointing mistakes in training code and configs before the run.

`check_source(source, path, options)` is the whole engine call: it picks the config checks or the
Python pass by file name, applies select/ignore and `# noqa`, and returns sorted findings. It never
raises on bad input: a file that cannot be parsed gives one `syntax-error` finding, and one too large to
parse or whose YAML aliases expand too far one `file-skipped` finding (the bounds are in check/bounds.py).
With `cancelled`, a callable polled as the work goes, it raises CheckCancelledError once that says so.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Sequence

from rootrank.check import rules as _rules  # noqa: F401  (registers every rule)
from rootrank.check.bounds import (
    MAX_FINDINGS_PER_FILE,
    MAX_PARSE_CHARS,
    SKIPPED,
    Cancelled,
    CheckCancelledError,
    over_parse_cap,
    skipped,
    stop_if,
)
from rootrank.check.noqa import Text, comments_at, language_of, silenced
from rootrank.check.options import CheckOptions
from rootrank.check.registry import RULES
from rootrank.check.source import MENTIONS_CHECKPOINTING, Locator
from rootrank.check.walker import collect, run_rules
from rootrank.model import Finding, Severity

__all__ = ["MAX_PARSE_CHARS", "SKIPPED", "SYNTAX_ERROR", "CheckCancelledError", "CheckOptions", "check_source", "filter_findings", "fix_source", "fix_together", "is_config",
           "is_notebook", "severity_of"]

LOG = logging.getLogger(__name__)

SYNTAX_ERROR = "syntax-error"
CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".sh")
NOTEBOOK_SUFFIX = ".ipynb"


def is_config(path: str) -> bool:
    return path.lower().endswith(CONFIG_SUFFIXES)


def is_notebook(path: str) -> bool:
    return path.lower().endswith(NOTEBOOK_SUFFIX)


def _check_notebook(source: str, path: str, options: CheckOptions, cancelled: Cancelled | None) -> list[Finding]:
    """The notebook's code cells as one module; findings (and fixes) in (cell, line) positions. A cell
    that does not parse is reported and left out, and the other cells are still checked (a notebook is
    often saved with one broken cell)."""
    from rootrank.check.notebook import NotebookError, notebook_module, parse_notebook, to_cells

    try:
        data = parse_notebook(source)
    except NotebookError as problem:
        return [Finding(SYNTAX_ERROR, Severity.ERROR, path, 1, 1, 1, 1, f"cannot read: {problem}")]
    broken: list[Finding] = []
    left_out: set[int] = set()
    for _ in range(len(data["cells"]) + 1):
        module = notebook_module(data, skip=left_out)
        if not MENTIONS_CHECKPOINTING.search(module.text):
            return broken
        too_large = over_parse_cap(module.text, "code cells")
        if too_large is not None:
            return [skipped(path, too_large)]
        locator = Locator(module.text)
        try:
            findings = _check_python(module.text, path, locator, options, cancelled)
        except CheckCancelledError:
            raise
        except Exception:
            LOG.exception("rootrank: checking %s failed; no findings for it", path)
            return []
        unparsed = next((f for f in findings if f.rule == SYNTAX_ERROR), None)
        where = module.locate(unparsed.line) if unparsed is not None else None
        if unparsed is None or where is None:
            return [*broken, *to_cells(module, filter_findings(findings, locator, options))]
        broken.extend(to_cells(module, [unparsed]))
        left_out.add(where[0])
    return []


def check_source(source: str, path: str, options: CheckOptions | None = None,
                 cancelled: Cancelled | None = None) -> list[Finding]:
    """Findings for one file's text; pure, and never raises on bad input (only CheckCancelledError, when
    `cancelled()` turns true while it works)."""
    options = options or CheckOptions()
    if not MENTIONS_CHECKPOINTING.search(source):
        return []
    stop_if(cancelled)
    if is_notebook(path):
        # The notebook's JSON is read whole (outputs make notebooks large); its code cells are capped.
        return _capped(_check_notebook(source, path, options, cancelled), path)
    too_large = over_parse_cap(source, "YAML/JSON" if is_config(path) else "Python")
    if too_large is not None:
        return [skipped(path, too_large)]
    locator = Locator(source)
    try:
        if is_config(path):
            from rootrank.check.configs import check_config

            findings = check_config(source, path, locator, dict(options.versions), cancelled=cancelled)
        else:
            findings = _check_python(source, path, locator, options, cancelled)
    except CheckCancelledError:
        raise
    except Exception:  # a bug of ours must not take the editor or the CLI down with it
        LOG.exception("rootrank: checking %s failed; no findings for it", path)
        return []
    return _capped(filter_findings(findings, locator, options, path), path)


def _capped(findings: list[Finding], path: str) -> list[Finding]:
    if len(findings) <= MAX_FINDINGS_PER_FILE:
        return findings
    LOG.warning("rootrank: %s has %d findings; the first %d are kept", path, len(findings), MAX_FINDINGS_PER_FILE)
    return findings[:MAX_FINDINGS_PER_FILE]


_MAY_SILENCE = re.compile("noqa", re.I)
MAX_FIX_PASSES = 10  # as ruff: re-check after each pass, since overlapping fixes wait for the next one


MAX_FIX_CHECKS = 24  # re-checks one fix-all may spend finding the fixes that hold together (see fix_together)


def fix_together(source: str, path: str, findings: Sequence[Finding], recheck: Callable[[str], list[Finding]],
                 unsafe: bool = False, max_checks: int = MAX_FIX_CHECKS
                 ) -> tuple[str, list[Finding], list[Finding] | None]:
    """One fix-all pass over `findings` (their chosen fixes, check/fixes.choose): (the text, the findings
    fixed, `recheck(text)` when the text changed, else None).

    Each fix is proven alone where it is made; together they must hold too. The combined text must compile
    (when the source did) and its re-check must no longer show any finding that was fixed (fixes.still_found;
    for a notebook, compiling is the test). When all together fail, the fixes are tried by halves, each half
    added to those already kept only if the result still holds (so a fix that breaks the others is dropped
    and every fix compatible with the kept ones stays; a fix whose finding is still reported is left out
    at once, without halving), within `max_checks` re-checks (and four times as many compiles), so a pass
    costs one re-check when nothing conflicts and a fix-all stays bounded on a hostile file."""
    from rootrank.check.fixes import plan_fixes, splice, still_found

    notebook = is_notebook(path)
    compiled = _compiles(source, path)
    ordered = sorted(findings, key=lambda f: (f.cell or 0, f.line, f.column, f.rule))
    checks = tries = 0
    kept: list[Finding] = []
    best: tuple[str, list[Finding], list[Finding] | None] = (source, [], None)

    def attempt(group: list[Finding]) -> tuple[str, list[Finding], list[Finding] | None] | list[Finding] | None:
        """The result of fixing `group`; when it does not hold, None if it does not compile, else the fixed
        findings still reported."""
        nonlocal checks, tries
        tries += 1
        if notebook:
            from rootrank.check.notebook import apply_to_cells

            text = apply_to_cells(source, group, lambda cell, found: splice(cell, plan_fixes(cell, found, unsafe).spans))
            fixed, plan = group, None
        else:
            plan = plan_fixes(source, group, unsafe)
            text, fixed = splice(source, plan.spans), plan.fixed
        if text == source:
            return source, [], None
        if compiled and not _compiles(text, path):
            return None
        checks += 1
        after = recheck(text)
        remaining = still_found(source, plan, text, after) if plan is not None else []
        return remaining or (text, fixed, after)

    def exhausted() -> bool:
        return checks >= max_checks or tries >= 4 * max_checks  # each try compiles the whole text

    def add(group: list[Finding]) -> None:
        nonlocal best
        while group and not exhausted():
            result = attempt(kept + group)
            if isinstance(result, tuple):
                kept.extend(group)
                best = result
                return
            blamed = {id(f) for f in result or ()}
            if result is not None and not any(id(f) in blamed for f in kept):
                # compiled, but some fixed findings of the group are still reported: without them, try again
                group = [f for f in group if id(f) not in blamed]
                continue
            if len(group) > 1:
                middle = len(group) // 2
                add(group[:middle])
                add(group[middle:])
            return

    add(ordered)
    return best


def fix_source(source: str, path: str, options: CheckOptions | None = None,
               unsafe: bool = False) -> tuple[str, int]:
    """The text after `--fix` (safe fixes; `unsafe` adds the unsafe ones), re-checked after each pass until
    nothing changes, and how many findings were fixed. Notebooks are fixed cell by cell. Each pass keeps
    the fixes that hold together (fix_together): Python that compiled before compiles after, and no fixed
    finding is still reported."""
    from rootrank.check.fixes import choose

    def recheck(text: str) -> list[Finding]:
        return check_source(text, path, options)

    count = 0
    original = source
    after: list[Finding] | None = None
    for _ in range(MAX_FIX_PASSES):
        current = after if after is not None else recheck(source)
        findings = [f for f in current if choose(f, unsafe) is not None]
        fixed, done, after = fix_together(source, path, findings, recheck, unsafe)
        if fixed == source:
            break
        count += len(done)
        source = fixed
    return _keep_line_endings(original, source), count


def _compiles(text: str, path: str) -> bool:
    """Whether Python (or a notebook's code cells, as one module) compiles: `ast.parse` alone lets
    through what the compiler refuses (`yield` outside a function, `return` at module level). A config
    must parse: each of its fixes is proven alone (check/configs), and this holds them together."""
    if is_config(path):
        from rootrank.check.configs import parses

        return parses(text, path)
    if is_notebook(path):
        from rootrank.check.notebook import NotebookError, notebook_module, parse_notebook

        try:
            text = notebook_module(parse_notebook(text)).text
        except NotebookError:
            return False
    try:
        compile(text, path, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def _keep_line_endings(original: str, fixed: str) -> str:
    """A file written with CRLF throughout stays so: a fix's (or a notebook's re-dumped) plain newlines
    become CRLF too."""
    if fixed == original or "\r\n" not in original or original.count("\n") != original.count("\r\n"):
        return fixed
    return re.sub(r"(?<!\r)\n", "\r\n", fixed)


def filter_findings(findings: list[Finding], locator: Locator, options: CheckOptions,
                    path: str = "") -> list[Finding]:
    """Apply select/ignore and `# noqa` to one file's findings, and sort them. `path` says how the file's
    comments are written (check/noqa.language_of; Python when not given)."""
    findings = [f for f in findings if f.rule in (SYNTAX_ERROR, SKIPPED) or options.enabled(f.rule)]
    language = language_of(path) if path else "python"
    # No "noqa" anywhere (a search in C): nothing can be silenced, and no comment need be read.
    if options.noqa and findings and language is not None and _MAY_SILENCE.search(locator.source):
        text = Text(locator.line_text, len(locator.starts), lambda: locator.source)
        findings = [f for f in findings
                    # a skipped file was not read: a `# noqa` on its first line does not stand for it
                    if f.rule == SKIPPED or not silenced(f.rule, f.line, comments_at(text, language, f.line, f.column))]
    return sorted(findings, key=lambda f: (f.line, f.column, f.rule))


def _check_python(source: str, path: str, locator: Locator, options: CheckOptions,
                  cancelled: Cancelled | None = None) -> list[Finding]:
    try:
        semantic = collect(source, path, locator, dict(options.versions), cancelled)
    except SyntaxError as error:
        line = error.lineno or 1
        column = max(error.offset or 1, 1)
        return [Finding(SYNTAX_ERROR, Severity.ERROR, path, line, column, line, column,
                        f"cannot parse: {error.msg}")]
    except (RecursionError, MemoryError, ValueError) as error:
        # Deeply nested expressions overflow the parser; null bytes raise ValueError.
        reason = "too deeply nested" if isinstance(error, RecursionError) else str(error) or type(error).__name__
        return [Finding(SYNTAX_ERROR, Severity.ERROR, path, 1, 1, 1, 1, f"cannot parse: {reason}")]
    stop_if(cancelled)
    selected = [rule_id for rule_id in sorted(RULES) if options.enabled(rule_id)]
    return run_rules(semantic, selected, {rule_id: severity_of(rule_id) for rule_id in selected}, cancelled)


def severity_of(rule_id: str, default: Severity | None = None) -> Severity:
    """The failure entry's severity when the entry exists, else the rule's default."""
    try:
        from rootrank.library import load_library

        entry = load_library().get(rule_id)
    except Exception:  # a broken library must not stop the checks
        LOG.exception("rootrank: could not load the failure library")
        entry = None
    if entry is not None:
        return entry.severity
    if default is not None:
        return default
    rule = RULES.get(rule_id)
    return rule.default_severity if rule else Severity.WARNING
