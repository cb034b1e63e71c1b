"""Finding `rules/` and loading every entry in it safely: YAML with the safe loader and no anchors, a
size cap per file, and a cache of entries that passed validation before.

An entry that fails validation is left out with a `LoadProblem` naming the file, the field and the
problem; every other entry still loads. See docs/entry-format.md for the format.
"""

from __future__ import annotations

import functools
import logging
import os
from pathlib import Path
from typing import Any

from rootrank.cachefiles import cache_dir, read_json, write_json
from rootrank.library.records import Entry, Library, LoadProblem
from rootrank.library.validate import EntryValidator

LOG = logging.getLogger("rootrank.library")

MAX_FILE_BYTES = 1_000_000


def rules_dir() -> Path:
    """The folder holding the entries: inside an installed wheel, else the checkout's top-level rules/."""
    override = os.environ.get("ROOTRANK_RULES")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent.parent  # the rootrank package
    bundled = here / "rules"
    if bundled.is_dir():
        return bundled
    for parent in here.parents:
        candidate = parent / "rules"
        if candidate.is_dir() and (parent / "pyproject.toml").is_file():
            return candidate
    return bundled


@functools.lru_cache(maxsize=4)
def load_library(directory: str | None = None) -> Library:
    root = Path(directory) if directory else rules_dir()
    entries: dict[str, Entry] = {}
    problems: list[LoadProblem] = []
    cache = None if os.environ.get("ROOTRANK_NO_CACHE") else LibraryCache(root)
    for path in sorted(root.rglob("*.yaml")):
        entry, found = load_entry(path, cache)
        problems.extend(found)
        if entry is None:
            continue
        if entry.id in entries:
            problems.append(LoadProblem(path, "id", f"duplicate id, also in {entries[entry.id].path}"))
            continue
        entries[entry.id] = entry
    for entry in entries.values():
        if entry.patterns and all(p.follows for p in entry.patterns):
            problems.append(LoadProblem(entry.path, "log", "every pattern is `follows: true`; none can start a match",
                                        skipped=False))
        for other in entry.related:
            if other not in entries:
                problems.append(LoadProblem(entry.path, "related", f"unknown entry id {other!r}", skipped=False))
    for problem in problems:
        LOG.debug("entry problem: %s", problem)
    if cache is not None:
        cache.save()
    return Library(entries, problems)


def read_yaml_safely(path: Path) -> Any:
    """Parse one YAML file with the safe loader, refusing anchors/aliases (alias bombs) and huge files."""
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise ValueError(f"file is {size} bytes, more than {MAX_FILE_BYTES}")
    text = path.read_bytes().decode("utf-8")
    # Imported here: with the parsed library cached, a diagnosis never needs YAML (15 ms of start-up).
    import yaml

    loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    # Entries never need anchors; refusing them removes billion-laughs expansion entirely.
    try:
        for event in yaml.parse(text, Loader=loader):
            if isinstance(event, yaml.AliasEvent) or getattr(event, "anchor", None):
                raise ValueError("YAML anchors and aliases are not allowed in entries")
        return yaml.load(text, Loader=loader)
    except yaml.YAMLError as exc:
        raise ValueError(str(exc)) from exc


def load_entry(path: Path, cache: LibraryCache | None = None) -> tuple[Entry | None, list[LoadProblem]]:
    cached = cache.get(path) if cache is not None else None
    if cached is not None:
        checker = EntryValidator(path, cached, trusted=True)
        entry = checker.build()
        if entry is not None and not checker.problems:
            return entry, []
    try:
        data = read_yaml_safely(path)
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        message = str(exc).replace("\n", " ")
        return None, [LoadProblem(path, "<file>", f"not a valid entry file: {message}")]
    checker = EntryValidator(path, data)
    try:
        entry = checker.build()
    except Exception as exc:
        return None, [LoadProblem(path, "<file>", f"malformed entry ({type(exc).__name__}: {exc})")]
    if entry is not None and not checker.problems and cache is not None:
        cache.put(path, data)
    return entry, checker.problems


class LibraryCache:
    """Parsed, validated entries kept as JSON between runs (YAML parsing and pattern checks cost more
    than the rest of a small diagnosis). Keyed by path, size and modification time; an entry is only
    stored after it passed every check. ROOTRANK_NO_CACHE=1 turns it off."""

    VERSION = 4  # bump whenever validation changes: cached entries skip the checks they passed

    def __init__(self, root: Path) -> None:
        import hashlib

        digest = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
        self.file = cache_dir() / f"library-{digest}.json"
        self.entries: dict[str, Any] = {}
        self.dirty = False
        data = read_json(self.file)
        if isinstance(data, dict) and data.get("version") == self.VERSION and isinstance(data.get("entries"), dict):
            self.entries = data["entries"]

    @staticmethod
    def _stamp(path: Path) -> list[int]:
        info = path.stat()
        return [info.st_size, info.st_mtime_ns]

    def get(self, path: Path) -> Any:
        item = self.entries.get(str(path))
        try:
            if item and item.get("stamp") == self._stamp(path):
                return item.get("data")
        except OSError:
            pass
        return None

    def put(self, path: Path, data: Any) -> None:
        try:
            self.entries[str(path)] = {"stamp": self._stamp(path), "data": data}
            self.dirty = True
        except OSError:
            pass

    def save(self) -> None:
        if self.dirty:
            write_json(self.file, {"version": self.VERSION, "entries": self.entries})
