"""The resume cache: rows of runs already scanned, kept with the fingerprint of their files.

A run whose files, sizes and mtimes are those of the cached row is not read again. The cache is
one small JSON file per scanned root in the user's cache folder (never next to the logs, which may
sit on a read-only shared file system); it is only valid for the rootrank version and the entry
library that wrote it. Unreadable runs are not kept: the next scan tries them again.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
from pathlib import Path

from rootrank import __version__
from rootrank.cachefiles import cache_dir, read_json
from rootrank.fleet.record import UNREADABLE, RunResult, row_from_json, row_to_json
from rootrank.fleet.runs import Run
from rootrank.library import rules_dir

CACHE_SCHEMA = "rootrank.scan-cache/1"
LOG = logging.getLogger(__name__)


def default_cache_path(root: str) -> Path:
    base = cache_dir() / "scan"
    key = hashlib.sha256(str(Path(root).resolve()).encode()).hexdigest()[:16]
    return base / f"{key}.json"


def _library_stamp() -> str:
    """The entry library's version: its files' names, sizes and mtimes (rows depend on the entries)."""
    digest = hashlib.sha256(__version__.encode())
    root = rules_dir()
    for path in sorted(root.rglob("*.yaml")):
        status = path.stat()
        digest.update(f"{path.relative_to(root)}:{status.st_size}:{status.st_mtime_ns}\n".encode())
    return digest.hexdigest()[:16]


def _fingerprint(run: Run) -> list[list[object]]:
    return [list(f) for f in run.files]


class ScanCache:
    def __init__(self, path: Path | None) -> None:
        self.path = path
        self._stamp = _library_stamp() if path is not None else ""
        self._rows: dict[str, tuple[list[list[object]], dict[str, object]]] = {}
        self.dirty = False
        if path is not None:
            self._load(path)

    def _load(self, path: Path) -> None:
        data = read_json(path)  # None: no cache yet, or a damaged one: scan everything
        if not isinstance(data, dict) or data.get("schema") != CACHE_SCHEMA or data.get("library") != self._stamp:
            return
        for item in data.get("runs", ()):
            try:
                self._rows[item["path"]] = (item["files"], item["row"])
            except (KeyError, TypeError):
                continue

    def get(self, run: Run) -> RunResult | None:
        cached = self._rows.get(run.path)
        if cached is None or cached[0] != _fingerprint(run) or not run.files:
            return None
        try:
            row = row_from_json(cached[1])
        except (KeyError, TypeError, ValueError):
            return None
        return row

    def put(self, run: Run, row: RunResult) -> None:
        if self.path is None or row.status == UNREADABLE:
            return
        self._rows[run.path] = (_fingerprint(run), row_to_json(row))
        self.dirty = True

    def save(self) -> None:
        """Write atomically (a scan interrupted while saving keeps the previous cache)."""
        if self.path is None or not self.dirty:
            return
        data = {"schema": CACHE_SCHEMA, "library": self._stamp,
                "runs": [{"path": p, "files": f, "row": r} for p, (f, r) in sorted(self._rows.items())]}
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(prefix=".scan-", dir=self.path.parent)
        except OSError as exc:
            # A cache that cannot be written costs the next scan time, not this scan its result.
            LOG.warning("rootrank: cannot write the scan cache %s (%s); going on without it", self.path, exc)
            self.path = None
            return
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                json.dump(data, handle, separators=(",", ":"))
            os.replace(temporary, self.path)
        except BaseException:
            os.unlink(temporary)
            raise
        self.dirty = False
