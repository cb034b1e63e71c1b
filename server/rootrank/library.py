"""The failure library: finds `rules/`, loads every entry safely, validates it, and reports broken files.

An entry that fails validation is left out with a `LoadProblem` naming the file, the field and the
problem; every other entry still loads. See docs/entry-format.md for the format.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rootrank.model import Role, Severity
from rootrank.regex_safety import backtracking_risk, literal_is_required

LOG = logging.getLogger(__name__)

ID_PATTERN = re.compile(r"^[a-z][a-z0-9]*\.[a-z0-9]+(?:-[a-z0-9]+)*$")
STACKS = frozenset(
    {"peft", "deepspeed", "fsdp", "transformers", "accelerate", "lightning", "megatron", "ddp", "compile", "ray",
     "slurm", "trl", "torchrun", "nccl", "gloo", "xformers"}
)
MAX_FILE_BYTES = 1_000_000


_COMPILED: dict[tuple[str, bool], re.Pattern[str]] = {}


@dataclass(frozen=True)
class LogPattern:
    entry_id: str
    name: str
    pattern: str
    literal: str
    ignore_case: bool
    source: str
    versions: str
    rank_is: str = "global"
    follows: bool = False  # a continuation line: looked for only right after a line of the same entry

    @property
    def regex(self) -> re.Pattern[str]:
        """Compiled on first use: most patterns never meet their literal in a given log."""
        key = (self.pattern, self.ignore_case)
        compiled = _COMPILED.get(key)
        if compiled is None:
            compiled = _COMPILED[key] = re.compile(self.pattern, re.IGNORECASE if self.ignore_case else 0)
        return compiled


@dataclass(frozen=True)
class FixVariant:
    when: Mapping[str, Any]
    text: str


@dataclass(frozen=True)
class Example:
    text: str
    source: str = ""
    fields: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Entry:
    id: str
    title: str
    category: str
    severity: Severity
    role: Role
    summary: str
    symptoms: tuple[tuple[str, str], ...]
    root_causes: tuple[str, ...]
    fix: str
    fix_variants: tuple[FixVariant, ...]
    verify_command: str
    verify_success: str
    references: tuple[str, ...]
    patterns: tuple[LogPattern, ...]
    path: Path
    priority: int = 50
    when_it_matters: str = ""
    affected: tuple[str, ...] = ()
    examples_match: tuple[Example, ...] = ()
    examples_no_match: tuple[str, ...] = ()
    related: tuple[str, ...] = ()
    check: Mapping[str, str] = field(default_factory=dict)

    @property
    def verify(self) -> str:
        if self.verify_success:
            return f"{self.verify_command}\n# success: {self.verify_success}"
        return self.verify_command


@dataclass(frozen=True)
class LoadProblem:
    path: Path
    field: str
    problem: str
    skipped: bool = True  # False: the entry loaded, but something in it needs attention

    def __str__(self) -> str:
        return f"{self.path}: {self.field}: {self.problem}"


@dataclass
class Library:
    entries: dict[str, Entry]
    problems: list[LoadProblem]

    @functools.cached_property
    def patterns(self) -> tuple[LogPattern, ...]:
        return tuple(p for e in self.entries.values() for p in e.patterns)

    def get(self, entry_id: str) -> Entry | None:
        return self.entries.get(entry_id)

    def __iter__(self) -> Iterator[Entry]:
        return iter(sorted(self.entries.values(), key=lambda e: e.id))


def rules_dir() -> Path:
    """The folder holding the entries: inside an installed wheel, else the checkout's top-level rules/."""
    override = os.environ.get("ROOTRANK_RULES")
    if override:
        return Path(override)
    here = Path(__file__).resolve().parent
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
        checker = _EntryChecker(path, cached, trusted=True)
        entry = checker.build()
        if entry is not None and not checker.problems:
            return entry, []
    try:
        data = read_yaml_safely(path)
    except (ValueError, UnicodeDecodeError, OSError) as exc:
        message = str(exc).replace("\n", " ")
        return None, [LoadProblem(path, "<file>", f"not a valid entry file: {message}")]
    checker = _EntryChecker(path, data)
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

    VERSION = 3  # bump whenever validation changes: cached entries skip the checks they passed

    def __init__(self, root: Path) -> None:
        import hashlib

        base = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "rootrank"
        digest = hashlib.sha1(str(root.resolve()).encode()).hexdigest()[:16]
        self.file = base / f"library-{digest}.json"
        self.entries: dict[str, Any] = {}
        self.dirty = False
        try:
            data = json.loads(self.file.read_text(encoding="utf-8"))
            if data.get("version") == self.VERSION and isinstance(data.get("entries"), dict):
                self.entries = data["entries"]
        except (OSError, ValueError):
            pass

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
        if not self.dirty:
            return
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            tmp = self.file.with_suffix(f".{os.getpid()}.tmp")
            tmp.write_text(json.dumps({"version": self.VERSION, "entries": self.entries}), encoding="utf-8")
            os.replace(tmp, self.file)
        except (OSError, TypeError, ValueError):
            pass


class _EntryChecker:
    """Validates one parsed entry, collecting every problem rather than stopping at the first."""

    def __init__(self, path: Path, data: Any, trusted: bool = False) -> None:
        self.path = path
        self.data = data
        self.trusted = trusted  # the same content passed every check before (see LibraryCache)
        self.problems: list[LoadProblem] = []

    def fail(self, field_name: str, problem: str) -> None:
        self.problems.append(LoadProblem(self.path, field_name, problem))

    def text(self, key: str, required: bool = True) -> str:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "missing")
            return ""
        if not isinstance(value, str) or (required and not value.strip()):
            self.fail(key, "must be a non-empty string")
            return ""
        return value.strip()

    def str_list(self, key: str, required: bool = False) -> tuple[str, ...]:
        value = self.data.get(key)
        if value is None:
            if required:
                self.fail(key, "missing")
            return ()
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            self.fail(key, "must be a list of strings")
            return ()
        return tuple(v.strip() for v in value)

    def build(self) -> Entry | None:
        if not isinstance(self.data, dict):
            self.fail("<file>", "top level must be a mapping")
            return None
        entry_id = self.text("id")
        if entry_id and not ID_PATTERN.match(entry_id):
            self.fail("id", f"{entry_id!r} is not '<category>.<kebab-name>'")
        category = self.text("category")
        if entry_id and category and not entry_id.startswith(category + "."):
            self.fail("category", f"{category!r} is not the prefix of id {entry_id!r}")
        severity = self.enum("severity", Severity)
        role = self.enum("role", Role)
        priority = self.data.get("priority", 50)
        if not isinstance(priority, int) or isinstance(priority, bool):
            self.fail("priority", "must be an integer")
            priority = 50
        entry = Entry(
            id=entry_id,
            title=self.text("title"),
            category=category,
            severity=severity or Severity.ERROR,
            role=role or Role.CAUSE,
            summary=self.text("summary"),
            when_it_matters=self.text("when_it_matters", required=False),
            symptoms=self.symptoms(),
            root_causes=self.str_list("root_causes", required=True),
            fix="",
            fix_variants=(),
            verify_command="",
            verify_success="",
            references=self.str_list("references", required=True),
            patterns=self.patterns(entry_id),
            path=self.path,
            priority=priority,
            affected=self.str_list("affected"),
            related=self.str_list("related"),
            check=self.check_section(),
        )
        fix, variants = self.fix()
        verify_command, verify_success = self.verify()
        matches, no_matches = self.examples(entry)
        if not entry.references:
            self.fail("references", "at least one reference is required")
        if self.problems:
            return None
        return _replace(entry, fix=fix, fix_variants=variants, verify_command=verify_command,
                        verify_success=verify_success, examples_match=matches, examples_no_match=no_matches)

    def enum(self, key: str, kind: type[Severity] | type[Role]) -> Any:
        value = self.data.get(key)
        try:
            return kind(value)
        except ValueError:
            allowed = " | ".join(m.value for m in kind)
            self.fail(key, f"{value!r} is not one of {allowed}")
            return None

    def symptoms(self) -> tuple[tuple[str, str], ...]:
        value = self.data.get("symptoms")
        if not isinstance(value, list) or not value:
            self.fail("symptoms", "must be a non-empty list of {symptom, why}")
            return ()
        out = []
        for i, item in enumerate(value):
            if not isinstance(item, dict) or not isinstance(item.get("symptom"), str) \
                    or not isinstance(item.get("why"), str):
                self.fail(f"symptoms[{i}]", "must be a mapping with string 'symptom' and 'why'")
                continue
            out.append((item["symptom"].strip(), item["why"].strip()))
        return tuple(out)

    def fix(self) -> tuple[str, tuple[FixVariant, ...]]:
        value = self.data.get("fix")
        if isinstance(value, str):
            return value.strip(), ()
        if not isinstance(value, dict) or not isinstance(value.get("default"), str):
            self.fail("fix", "must be a string or a mapping with a 'default' string")
            return "", ()
        variants = []
        raw_variants = value.get("variants") or []
        if not isinstance(raw_variants, list):
            self.fail("fix.variants", "must be a list of {when, text}")
            raw_variants = []
        for i, item in enumerate(raw_variants):
            if not isinstance(item, dict) or not isinstance(item.get("when"), dict) \
                    or not isinstance(item.get("text"), str):
                self.fail(f"fix.variants[{i}]", "must be a mapping with 'when' (mapping) and 'text' (string)")
                continue
            unknown = {str(k) for k in item["when"]} - {"stack", "field", "flag"}
            if unknown:
                self.fail(f"fix.variants[{i}].when", f"unknown condition(s) {sorted(unknown)}")
            stacks = item["when"].get("stack")
            stack_list = [stacks] if isinstance(stacks, str) else stacks if isinstance(stacks, list) else None
            if stacks is not None and stack_list is None:
                self.fail(f"fix.variants[{i}].when.stack", "must be a stack name or a list of them")
            for stack in stack_list or []:
                if not isinstance(stack, str) or stack not in STACKS:
                    self.fail(f"fix.variants[{i}].when.stack", f"unknown stack {stack!r}")
            variants.append(FixVariant(item["when"], item["text"].strip()))
        return value["default"].strip(), tuple(variants)

    def verify(self) -> tuple[str, str]:
        value = self.data.get("verify")
        if isinstance(value, str) and value.strip():
            return value.strip(), ""
        if not isinstance(value, dict) or not isinstance(value.get("command"), str):
            self.fail("verify", "must be a mapping with 'command' and 'success'")
            return "", ""
        success = value.get("success", "")
        if not isinstance(success, str):
            self.fail("verify.success", "must be a string")
            success = ""
        return value["command"].strip(), success.strip()

    def patterns(self, entry_id: str) -> tuple[LogPattern, ...]:
        value = self.data.get("log")
        if value is None:
            return ()
        if not isinstance(value, list):
            self.fail("log", "must be a list of patterns")
            return ()
        out: list[LogPattern] = []
        names: set[str] = set()
        for i, item in enumerate(value):
            where = f"log[{i}]"
            if not isinstance(item, dict):
                self.fail(where, "must be a mapping")
                continue
            name, regex_text, literal = item.get("name"), item.get("regex"), item.get("literal")
            source, versions = item.get("source"), item.get("versions")
            ignore_case = bool(item.get("ignore_case", False))
            for key, val in (("name", name), ("regex", regex_text), ("literal", literal), ("source", source),
                             ("versions", versions)):
                if not isinstance(val, str) or not val:
                    self.fail(f"{where}.{key}", "missing or not a string")
            if not all(isinstance(v, str) and v for v in (name, regex_text, literal, source, versions)):
                continue
            assert isinstance(name, str) and isinstance(regex_text, str) and isinstance(literal, str)
            if name in names:
                self.fail(f"{where}.name", f"duplicate pattern name {name!r}")
            names.add(name)
            if len(literal) < 4:
                self.fail(f"{where}.literal", "must be at least 4 characters so the prefilter stays selective")
            if not self.trusted:
                try:
                    re.compile(regex_text, re.IGNORECASE if ignore_case else 0)
                except re.error as exc:
                    self.fail(f"{where}.regex", f"does not compile: {exc}")
                    continue
                risk = backtracking_risk(regex_text)
                if risk:
                    self.fail(f"{where}.regex", f"may backtrack catastrophically: {risk}")
                    continue
                if not literal_is_required(regex_text, literal, ignore_case):
                    # The prefilter only hands over lines holding the literal: a match without it is lost.
                    self.fail(f"{where}.literal", f"{literal!r} is not in every match of the regex")
                    continue
            rank_is = item.get("rank_is", "global")
            if rank_is not in ("global", "peer"):
                self.fail(f"{where}.rank_is", "must be 'global' or 'peer'")
            follows = item.get("follows", False)
            if not isinstance(follows, bool):
                self.fail(f"{where}.follows", "must be true or false")
                follows = False
            out.append(LogPattern(entry_id, name, regex_text, literal, ignore_case, str(source), str(versions),
                                  str(rank_is), follows))
        return tuple(out)

    def examples(self, entry: Entry) -> tuple[tuple[Example, ...], tuple[str, ...]]:
        value = self.data.get("examples")
        if value is None:
            if entry.patterns:
                self.fail("examples", "an entry with log patterns needs examples.match")
            return (), ()
        if not isinstance(value, dict):
            self.fail("examples", "must be a mapping with 'match' and 'no_match'")
            return (), ()
        matches: list[Example] = []
        raw_matches = value.get("match") or []
        if not isinstance(raw_matches, list):
            self.fail("examples.match", "must be a list")
            raw_matches = []
        for i, item in enumerate(raw_matches):
            if isinstance(item, str):
                matches.append(Example(item))
            elif isinstance(item, dict) and isinstance(item.get("text"), str):
                fields = item.get("fields") or {}
                if not isinstance(fields, dict):
                    self.fail(f"examples.match[{i}].fields", "must be a mapping")
                    fields = {}
                matches.append(Example(item["text"], str(item.get("source", "")),
                                       {str(k): str(v) for k, v in fields.items()}))
            else:
                self.fail(f"examples.match[{i}]", "must be a string or a mapping with 'text'")
        no_match = value.get("no_match") or []
        if not isinstance(no_match, list) or not all(isinstance(v, str) for v in no_match):
            self.fail("examples.no_match", "must be a list of strings")
            no_match = []
        if entry.patterns and not matches:
            self.fail("examples.match", "an entry with log patterns needs at least one real example")
        return tuple(matches), tuple(no_match)

    def check_section(self) -> Mapping[str, str]:
        value = self.data.get("check")
        if value is None:
            return {}
        if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
            self.fail("check", "must be a mapping of strings")
            return {}
        return {str(k): v.strip() for k, v in value.items()}


def _replace(entry: Entry, **changes: Any) -> Entry:
    import dataclasses

    return dataclasses.replace(entry, **changes)
