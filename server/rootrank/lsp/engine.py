"""The engine calls the server makes, imported on first use so that start-up stays at the lsprotocol import.

Every call here is a public contract from docs/architecture.md. A rule that raises must not cost the user
the other rules: `check_isolated` re-runs the checks one entry at a time when the whole run fails, and
reports each failing entry once.
"""

from __future__ import annotations

import functools
import inspect
import io
import logging
import os
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from rootrank.diagnose.live import GrowingText
    from rootrank.model import Diagnosis, Finding

LOG = logging.getLogger("rootrank.lsp")


def check_source(source: str, path: str, select: Iterable[str] = (), ignore: Iterable[str] = (),
                 versions: tuple[tuple[str, str], ...] = (), cancelled: Callable[[], bool] | None = None,
                 ) -> list[Finding]:
    """The findings, or CheckCancelledError (rootrank.check) once `cancelled()` is true."""
    from rootrank.check import CheckOptions
    from rootrank.check import check_source as run

    select, ignore = tuple(select), tuple(ignore)
    return list(run(source, path, CheckOptions(select=select, ignore=ignore, versions=versions), cancelled))


def versions_for(python: str, path: str | None, roots: tuple[str, ...]) -> tuple[tuple[str, str], ...]:
    """The library versions a document's code runs with: the `python` setting, else the active venv, else a
    .venv above the file or in a workspace folder, else the server's own. A `python` setting with no
    environment behind it is ignored (the server stays up; the checks assume the next place)."""
    from rootrank.environment import NoEnvironmentError, find_environment, roots_above

    near = (*roots_above(path), *roots) if path else roots
    try:
        env = find_environment(python, near)
    except NoEnvironmentError:
        LOG.warning("rootrank: the python setting %r has no site-packages; ignored", python)
        env = find_environment("", near)
    return tuple(sorted(env.versions.items()))


def checked_rule_ids() -> list[str]:
    """Ids of the entries that have code checks (for the one-at-a-time fallback)."""
    try:
        import rootrank.check  # noqa: F401 - importing the package registers its rules
        from rootrank.check.registry import RULES

        if RULES:
            return sorted(RULES)
    except Exception:  # the fallback below still works
        LOG.debug("no rule registry in rootrank.check", exc_info=True)
    return sorted(e.id for e in library().entries.values() if e.check)


def check_isolated(
    source: str,
    path: str,
    select: Iterable[str],
    ignore: Iterable[str],
    on_crash: Callable[[str, BaseException], None],
    versions: tuple[tuple[str, str], ...] = (),
    cancelled: Callable[[], bool] | None = None,
) -> list[Finding]:
    """Run the checks; when the run raises, run each entry's check alone and skip the ones that raise.

    `on_crash(rule_or_star, error)` is told about every failure ("*" for the whole run). A run stopped by
    `cancelled` raises CheckCancelledError (rootrank.check): a stale text is not re-run rule by rule.
    """
    from rootrank.check import CheckCancelledError

    select, ignore = tuple(select), tuple(ignore)
    try:
        return check_source(source, path, select, ignore, versions, cancelled)
    except (SyntaxError, CheckCancelledError) as stopped:
        if isinstance(stopped, CheckCancelledError):
            raise
        return []
    except Exception as exc:
        on_crash("*", exc)
    findings: list[Finding] = []
    for rule in checked_rule_ids():
        if rule in ignore or (select and not any(rule == s or rule.startswith(s.rstrip(".") + ".") for s in select)):
            continue
        try:
            findings.extend(check_source(source, path, (rule,), ignore, versions, cancelled))
        except CheckCancelledError:
            raise
        except SyntaxError:
            return findings
        except Exception as exc:
            on_crash(rule, exc)
    return findings


class DiagnosisCancelledError(Exception):
    """Raised inside a worker thread when the client no longer wants the diagnosis."""


class _CancellableBytes(io.BytesIO):
    """The text as a byte stream that stops being readable once `cancel` is set."""

    def __init__(self, data: bytes, cancel: threading.Event | None) -> None:
        super().__init__(data)
        self.cancel = cancel

    def _check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise DiagnosisCancelledError

    def read(self, size: int | None = -1, /) -> bytes:
        self._check()
        return super().read(size)

    def read1(self, size: int | None = -1, /) -> bytes:
        self._check()
        return super().read1(size)

    def readline(self, size: int | None = -1, /) -> bytes:
        self._check()
        return super().readline(size)

    def readinto(self, buffer: Any, /) -> int:
        self._check()
        return super().readinto(buffer)

    def __next__(self) -> bytes:
        self._check()
        return super().__next__()


def diagnose_text(
    text: str,
    source: str = "-",
    cancel: threading.Event | None = None,
    on_progress: Callable[[int, int], None] | None = None,
) -> Diagnosis:
    """`rootrank.diagnose.diagnose_text`, stoppable while it reads and reporting (bytes read, total bytes).

    With `cancel` or `on_progress` the text goes through the same byte-stream pipeline as diagnose_text,
    wrapped so that reading stops once `cancel` is set; the result is the same.
    """
    import rootrank.diagnose as diagnose

    pipeline_class = getattr(diagnose, "Pipeline", None)
    if pipeline_class is None or not hasattr(pipeline_class, "feed_stream") or (cancel is None and on_progress is None):
        return diagnose.diagnose_text(text, source=source)
    data = text.encode("utf-8", "replace")
    total = len(data)
    progress = (lambda done: on_progress(done, total)) if on_progress is not None else None
    pipeline = pipeline_class()
    options: dict[str, Any] = {}
    if progress is not None and "on_progress" in inspect.signature(pipeline.feed_stream).parameters:
        options["on_progress"] = progress
    pipeline.feed_stream(source, _CancellableBytes(data, cancel), **options)
    result: Diagnosis = pipeline.result()
    return result


class _CancellableFile(io.BufferedReader):
    """A log file read in a stream (never whole), that stops once `cancel` is set or past `limit` bytes."""

    def __init__(self, path: str, cancel: threading.Event | None, limit: int) -> None:
        super().__init__(io.FileIO(path, "r"), buffer_size=1 << 20)
        self.cancel = cancel
        self.limit = limit

    def _check(self) -> None:
        if self.cancel is not None and self.cancel.is_set():
            raise DiagnosisCancelledError
        if self.tell() > self.limit:
            raise FileTooLargeError(self.limit)

    def read(self, size: int | None = -1, /) -> bytes:
        self._check()
        return super().read(size)

    def read1(self, size: int = -1, /) -> bytes:
        self._check()
        return super().read1(size)

    def readline(self, size: int | None = -1, /) -> bytes:
        self._check()
        return super().readline(size)

    def readinto(self, buffer: Any, /) -> int:
        self._check()
        return super().readinto(buffer)

    def __next__(self) -> bytes:
        self._check()
        return super().__next__()


class FileTooLargeError(Exception):
    """A file that grew past the limit while it was read."""


def diagnose_file(path: str, cancel: threading.Event | None = None, limit: int = 1 << 40) -> Diagnosis:
    """A log file diagnosed as `rootrank diagnose FILE` reads it: streamed through the pipeline, so memory
    does not grow with the file; stoppable through `cancel`. The caller checks that it is a regular file."""
    import rootrank.diagnose as diagnose

    pipeline = diagnose.Pipeline()
    with _CancellableFile(path, cancel, limit) as handle:
        pipeline.feed_stream(path, handle)
    result: Diagnosis = pipeline.result()
    return result


def growing_text(source: str) -> GrowingText:
    """The live diagnosis of a log document that grows at its end (diagnose/live.py)."""
    from rootrank.diagnose.live import GrowingText

    return GrowingText(source)


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
