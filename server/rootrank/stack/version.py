"""Release versions and PEP 440 specifier sets, just enough to place an installed version in a fact's range.

No dependency on `packaging` (the package's own dependencies stay lean). Pre-releases, dev and local
suffixes sort as in PEP 440 for the cases that occur in the facts table: `5.0.0rc1` < `5.0.0` =
`5.0.0+cpu` < `5.0.0.post1`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_VERSION = re.compile(r"^\s*v?(\d+(?:\.\d+)*)(?:[-_.]?(a|b|rc|alpha|beta|c|pre|preview|dev)[-_.]?(\d*))?"
                      r"(?:[-_.]?post[-_.]?(\d*))?(?:\.?dev(\d*))?(?:\+[\w.]+)?\s*$", re.IGNORECASE)
_PRE = {"a": 0, "alpha": 0, "b": 1, "beta": 1, "c": 2, "rc": 2, "pre": 2, "preview": 2, "dev": -1}
_CLAUSE = re.compile(r"^\s*(==|!=|>=|<=|>|<)\s*([\w.*+!-]+)\s*$")


@dataclass(frozen=True, order=True, slots=True)
class Version:
    release: tuple[int, ...]
    stage: tuple[int, int]  # (pre-release rank, number); (3, 0) for a final release
    post: int

    @staticmethod
    def parse(text: str) -> Version | None:
        match = _VERSION.match(text or "")
        if not match:
            return None
        release = tuple(int(p) for p in match.group(1).split("."))
        while len(release) > 1 and release[-1] == 0:
            release = release[:-1]
        stage = (3, 0)
        if match.group(2):
            stage = (_PRE[match.group(2).lower()], int(match.group(3) or 0))
        elif match.group(5) is not None:
            stage = (-1, int(match.group(5) or 0))
        post = int(match.group(4) or 0) if match.group(4) is not None else -1
        return Version(release, stage, post)


@dataclass(frozen=True, slots=True)
class Clause:
    op: str
    version: str

    def admits(self, v: Version) -> bool:
        if self.op in ("==", "!=") and self.version.endswith(".*"):
            prefix = Version.parse(self.version[:-2])
            inside = prefix is not None and _padded(v.release, len(prefix.release))[: len(prefix.release)] \
                == prefix.release
            return inside if self.op == "==" else not inside
        bound = Version.parse(self.version)
        if bound is None:
            return False
        return {"==": v == bound, "!=": v != bound, ">=": v >= bound, "<=": v <= bound,
                ">": v > bound, "<": v < bound}[self.op]


def _padded(release: tuple[int, ...], n: int) -> tuple[int, ...]:
    return release + (0,) * max(0, n - len(release))


@dataclass(frozen=True, slots=True)
class Specifier:
    """`>=4.38.0,<5.0.0`: every clause must admit the version."""

    text: str
    clauses: tuple[Clause, ...]

    @staticmethod
    def parse(text: str) -> Specifier:
        clauses = []
        for part in text.split(","):
            match = _CLAUSE.match(part)
            if not match or (not match.group(2).endswith(".*") and Version.parse(match.group(2)) is None):
                raise ValueError(f"not a version specifier: {part.strip()!r}")
            clauses.append(Clause(match.group(1), match.group(2)))
        return Specifier(text, tuple(clauses))

    def admits(self, version: str | Version) -> bool:
        v = Version.parse(version) if isinstance(version, str) else version
        return v is not None and all(c.admits(v) for c in self.clauses)
