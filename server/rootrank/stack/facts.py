"""The version-facts table (versions.yaml next to this module): what a library does in which version range.

Loaded once into immutable records. `answer(topic, stack)` places the installed version in a row and says
which version the answer assumed; when the version is unknown (not installed, not found, or outside every
row) the answer is unknown and names the versions each possible value applies to, so that a finding can be
downgraded to a warning that says so.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rootrank.stack.version import Specifier, Version

TABLE = Path(__file__).with_name("versions.yaml")


@dataclass(frozen=True, slots=True)
class Row:
    versions: Specifier
    value: Any
    says: str
    source: str
    earliest_read: bool = False  # the lower bound is the earliest release read, not a first release

    def admits(self, version: str) -> bool:
        return self.versions.admits(version)


@dataclass(frozen=True, slots=True)
class Topic:
    id: str
    library: str
    meaning: str
    rows: tuple[Row, ...]
    entries: tuple[str, ...] = ()
    tested: str = ""

    def row_for(self, version: str | None) -> Row | None:
        if not version or Version.parse(version) is None:
            return None
        return next((r for r in self.rows if r.admits(version)), None)

    def versions_where(self, value: Any) -> str:
        """`transformers >=4.38.0,<5.0.0`: where the topic has this value."""
        return self._spell([r for r in self.rows if r.value == value])

    def since(self, value: Any) -> str:
        """`torch 2.14`: the first version read with this value (the lower bound of its first row), for a
        topic whose value, once reached, holds in every later row read; else `versions_where(value)`."""
        rows = [r for r in self.rows if r.value == value]
        lower = [c.version for c in rows[0].versions.clauses if c.op == ">="] if rows else []
        later = self.rows[self.rows.index(rows[0]):] if rows else ()
        if len(lower) != 1 or any(r.value != value for r in later):
            return self.versions_where(value)
        return f"{self.library} {lower[0]}"

    def versions_where_not(self, value: Any) -> str:
        return self._spell([r for r in self.rows if r.value != value])

    def _spell(self, rows: list[Row]) -> str:
        if not rows:
            return f"no {self.library} version read"
        # Adjacent rows (`<4.38.0` and `>=4.38.0,<5.0.0`) read as one range (`<5.0.0`).
        clauses = [c for r in rows for c in r.versions.clauses]
        bounds = {c.version for c in clauses if c.op == "<"} & {c.version for c in clauses if c.op == ">="}
        kept = [f"{c.op}{c.version}" for c in clauses if not (c.op in ("<", ">=") and c.version in bounds)]
        return f"{self.library} {','.join(kept) or 'any version'}"


@dataclass(frozen=True, slots=True)
class Answer:
    topic: Topic
    version: str | None  # the installed version, None when none was found
    row: Row | None  # None: unknown

    @property
    def known(self) -> bool:
        return self.row is not None

    @property
    def value(self) -> Any:
        return self.row.value if self.row is not None else None

    def is_(self, value: Any) -> bool | None:
        """True/False when known, None when the version is unknown."""
        return None if self.row is None else self.row.value == value

    @property
    def assumed(self) -> str:
        """`transformers 5.24.0` or `transformers: not found`: what the answer was based on."""
        if self.version is None:
            return f"{self.topic.library}: not found"
        if self.row is None:
            return f"{self.topic.library} {self.version} (outside the versions read)"
        return f"{self.topic.library} {self.version}"


class FactsError(ValueError):
    pass


@functools.lru_cache(maxsize=2)
def load_topics(path: str = str(TABLE)) -> Mapping[str, Topic]:
    from rootrank.library import read_yaml_safely

    data = read_yaml_safely(Path(path))
    if not isinstance(data, dict):
        raise FactsError(f"{path}: expected a mapping of topics")
    topics: dict[str, Topic] = {}
    for key, item in data.items():
        topics[key] = _topic(str(key), item, path)
    return topics


def _topic(key: str, item: Any, path: str) -> Topic:
    if not isinstance(item, dict) or not isinstance(item.get("rows"), list) or not item["rows"]:
        raise FactsError(f"{path}: {key}: needs `library`, `meaning` and a non-empty `rows` list")
    rows = []
    for i, row in enumerate(item["rows"]):
        where = f"{path}: {key}.rows[{i}]"
        if not isinstance(row, dict) or not all(isinstance(row.get(k), str) for k in ("versions", "says", "source")):
            raise FactsError(f"{where}: needs `versions`, `says` and `source` strings")
        try:
            spec = Specifier.parse(row["versions"])
        except ValueError as exc:
            raise FactsError(f"{where}: {exc}") from None
        rows.append(Row(spec, row.get("value"), row["says"], row["source"], row.get("bound") == "earliest-read"))
    return Topic(key, str(item.get("library", "")), str(item.get("meaning", "")), tuple(rows),
                 tuple(item.get("entries") or ()), str(item.get("tested") or ""))


def topic(topic_id: str) -> Topic:
    return load_topics()[topic_id]


def answer(topic_id: str, versions: Mapping[str, str]) -> Answer:
    """The row of `topic_id` for the installed version of its library (`versions`: package -> version)."""
    t = topic(topic_id)
    version = versions.get(t.library)
    return Answer(t, version, t.row_for(version))


def topics_for_entry(entry_id: str) -> list[Topic]:
    """The topics an entry's docs show (its `Versions` section)."""
    return [t for t in load_topics().values() if entry_id in t.entries]
