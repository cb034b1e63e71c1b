"""`rootrank check`: find activation-checkpointing mistakes in training code and configs before the run.

`check_source(source, path, options)` is the whole engine call: it picks the config checks or the
Python pass by file name, applies select/ignore and `# noqa`, and returns sorted findings. It never
raises on bad input: a file that cannot be parsed gives one `syntax-error` finding.
"""

from __future__ import annotations

import logging
import re

from rootrank.check import rules as _rules  # noqa: F401  (registers every rule)
from rootrank.check.options import CheckOptions
from rootrank.check.registry import RULES
from rootrank.check.source import MENTIONS_CHECKPOINTING, Locator
from rootrank.check.walker import collect, run_rules
from rootrank.model import Finding, Severity

__all__ = ["SYNTAX_ERROR", "CheckOptions", "check_source", "filter_findings", "is_config", "severity_of"]

LOG = logging.getLogger(__name__)

SYNTAX_ERROR = "syntax-error"
CONFIG_SUFFIXES = (".json", ".yaml", ".yml", ".sh")
_NOQA = re.compile(r"#\s*noqa(?::[ \t]*(?P<ids>[\w.\-]+(?:[ \t]*,[ \t]*[\w.\-]+)*))?", re.I)


def is_config(path: str) -> bool:
    return path.lower().endswith(CONFIG_SUFFIXES)


def check_source(source: str, path: str, options: CheckOptions | None = None) -> list[Finding]:
    """Findings for one file's text; pure, and never raises on bad input."""
    options = options or CheckOptions()
    if not MENTIONS_CHECKPOINTING.search(source):
        return []
    locator = Locator(source)
    try:
        if is_config(path):
            from rootrank.check.configs import check_config

            findings = check_config(source, path, locator)
        else:
            findings = _check_python(source, path, locator, options)
    except Exception:  # a bug of ours must not take the editor or the CLI down with it
        LOG.exception("rootrank: checking %s failed; no findings for it", path)
        return []
    return filter_findings(findings, locator, options)


def filter_findings(findings: list[Finding], locator: Locator, options: CheckOptions) -> list[Finding]:
    """Apply select/ignore and `# noqa` to one file's findings, and sort them."""
    findings = [f for f in findings if f.rule == SYNTAX_ERROR or options.enabled(f.rule)]
    if options.noqa:
        findings = [f for f in findings if not _silenced(f, locator)]
    return sorted(findings, key=lambda f: (f.line, f.column, f.rule))


def _check_python(source: str, path: str, locator: Locator, options: CheckOptions) -> list[Finding]:
    try:
        semantic = collect(source, path, locator)
    except SyntaxError as error:
        line = error.lineno or 1
        column = max(error.offset or 1, 1)
        return [Finding(SYNTAX_ERROR, Severity.ERROR, path, line, column, line, column,
                        f"cannot parse: {error.msg}")]
    except (RecursionError, MemoryError, ValueError) as error:
        # Deeply nested expressions overflow the parser; null bytes raise ValueError.
        reason = "too deeply nested" if isinstance(error, RecursionError) else str(error) or type(error).__name__
        return [Finding(SYNTAX_ERROR, Severity.ERROR, path, 1, 1, 1, 1, f"cannot parse: {reason}")]
    selected = [rule_id for rule_id in sorted(RULES) if options.enabled(rule_id)]
    return run_rules(semantic, selected, {rule_id: severity_of(rule_id) for rule_id in selected})


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


def _silenced(finding: Finding, locator: Locator) -> bool:
    match = _NOQA.search(locator.line_text(finding.line))
    if match is None:
        return False
    ids = match.group("ids")
    if not ids:
        return True
    from rootrank.check.options import matches

    return any(matches(finding.rule, i) for i in re.split(r"[ \t]*,[ \t]*", ids))
