"""The engine calls the server makes, imported on first use so that start-up stays at the lsprotocol import.

Every call here is a public contract from docs/architecture.md. A rule that raises must not cost the user
the other rules: `check_isolated` re-runs the checks one entry at a time when the whole run fails, and
reports each failing entry once.
"""

from __future__ import annotations

import functools
import logging
import os
import threading
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rootrank.model import Diagnosis, Finding

LOG = logging.getLogger("rootrank.lsp")


def check_source(source: str, path: str, select: Iterable[str] = (), ignore: Iterable[str] = ()) -> list[Finding]:
    from rootrank.lint import CheckOptions
    from rootrank.lint import check_source as run

    select, ignore = tuple(select), tuple(ignore)
    options = CheckOptions(select=select, ignore=ignore) if (select or ignore) else None
    return list(run(source, path, options))


def checked_rule_ids() -> list[str]:
    """Ids of the entries that have code checks (for the one-at-a-time fallback)."""
    try:
        import rootrank.lint  # noqa: F401 - importing the package registers its rules
        from rootrank.lint.registry import RULES

        if RULES:
            return sorted(RULES)
    except Exception:  # the fallback below still works
        LOG.debug("no rule registry in rootrank.lint", exc_info=True)
    return sorted(e.id for e in library().entries.values() if e.check)


def check_isolated(
    source: str,
    path: str,
    select: Iterable[str],
    ignore: Iterable[str],
    on_crash: Callable[[str, BaseException], None],
) -> list[Finding]:
    """Run the checks; when the run raises, run each entry's check alone and skip the ones that raise.

    `on_crash(rule_or_star, error)` is told about every failure ("*" for the whole run).
    """
    select, ignore = tuple(select), tuple(ignore)
    try:
        return check_source(source, path, select, ignore)
    except SyntaxError:
        return []
    except Exception as exc:
        on_crash("*", exc)
    findings: list[Finding] = []
    for rule in checked_rule_ids():
        if rule in ignore or (select and not any(rule == s or rule.startswith(s.rstrip(".") + ".") for s in select)):
            continue
        try:
            findings.extend(check_source(source, path, (rule,), ignore))
        except SyntaxError:
            return findings
        except Exception as exc:
            on_crash(rule, exc)
    return findings


class DiagnosisCancelledError(Exception):
    """Raised inside a worker thread when the client no longer wants the diagnosis."""


def diagnose_text(
    text: str,
    source: str = "-",
    cancel: threading.Event | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Diagnosis:
    """`rootrank.diagnose.diagnose_text`, stoppable between lines and reporting (lines read, total).

    Feeds the same lines to the same pipeline as diagnose_text does, so the result is identical.
    """
    import rootrank.diagnose as diagnose

    pipeline_class = getattr(diagnose, "Pipeline", None)
    if pipeline_class is None or (cancel is None and on_progress is None):
        return diagnose.diagnose_text(text, source=source)
    lines = text.split("\n")
    total = len(lines)

    def feed() -> Iterator[str]:
        for index, line in enumerate(lines):
            if not index & 0x1FFF:
                if cancel is not None and cancel.is_set():
                    raise DiagnosisCancelledError
                if on_progress is not None:
                    on_progress(index, total)
            yield line

    pipeline = pipeline_class()
    pipeline.feed(source, feed())
    return pipeline.result()


def diagnosis_json(diagnosis: Diagnosis) -> dict[str, Any]:
    from rootrank.render.json import diagnosis_to_json

    return diagnosis_to_json(diagnosis)


def diagnosis_markdown(diagnosis: Diagnosis) -> str:
    from rootrank.render.markdown import render_markdown

    return render_markdown(diagnosis)


def library() -> Any:
    from rootrank.library import load_library

    return load_library()


def title_of(entry_id: str) -> str:
    try:
        entry = library().get(entry_id)
    except Exception:
        return entry_id
    return entry.title if entry is not None else entry_id


@functools.lru_cache(maxsize=256)
def explain(entry_id: str) -> str | None:
    """The entry's Markdown (`rootrank explain`), or None when the entry or the docs module is missing."""
    try:
        from rootrank.docs import explain as run
    except ImportError:
        return None
    try:
        return run(entry_id)
    except Exception:
        LOG.warning("explain(%s) failed", entry_id, exc_info=True)
        return None


@functools.lru_cache(maxsize=256)
def docs_uri(entry_id: str) -> str | None:
    """file:// URI of the entry's local docs page when that page exists, else None."""
    path: str | None = None
    try:
        from rootrank.docs import docs_path

        path = str(docs_path(entry_id))
    except Exception:  # docs.py not there yet, or the call failed: look where the page would be
        try:
            from rootrank.library import rules_dir

            path = str(rules_dir().parent / "docs" / "rules" / f"{entry_id}.md")
        except Exception:
            path = None
    if path and os.path.isfile(path):
        return Path(path).resolve().as_uri()
    return None
