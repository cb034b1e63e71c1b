"""The server's settings: one typed record, read from `initializationOptions` and `didChangeConfiguration`.

Clients send settings in several shapes: `{"select": [...]}`, `{"rootrank": {...}}` (VS Code's section) or
`{"settings": {"rootrank": {...}}}`; keys may be camelCase or snake_case. A value of the wrong type is
reported and left at its default, so a typo in a user's settings never stops the server.
"""

from __future__ import annotations

import dataclasses
import fnmatch
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

SEVERITIES = ("error", "warning", "information", "hint")
_SEVERITY_ALIASES = {"info": "information", "warn": "warning"}


@dataclass(frozen=True)
class Settings:
    """What a user can configure, with the defaults that a client without settings gets."""

    select: tuple[str, ...] = ()
    """Entry ids or id prefixes to check (`checkpoint.` selects a family); empty selects every entry."""

    ignore: tuple[str, ...] = ()
    """Entry ids or id prefixes never to report; wins over `select`."""

    severity: Mapping[str, str] = field(default_factory=dict)
    """Severity overrides, entry id or prefix -> `error` | `warning` | `information` | `hint`."""

    check_on: str = "change"
    """`change`: check code as you type (debounced) and on save; `save`: only on open and save.
    (`lintOn`, its name before 0.2, is still read.)"""

    debounce_ms: int = 150
    """Quiet time after a burst of edits before code is checked again; the first edit is checked at once."""

    log_patterns: tuple[str, ...] = ("*.log", "*.out", "*.err", "slurm-*.out", "*.log.txt")
    """File-name globs of documents diagnosed as training logs (language id `log` always is)."""

    progress_lines: int = 20_000
    """Logs longer than this many lines report `$/progress` while they are diagnosed."""

    python: str = ""
    """The workspace's Python interpreter, read (never run with torch imported) to find its torch version."""

    def severity_for(self, rule: str) -> str | None:
        """The overriding severity for `rule`: the longest matching id or prefix wins."""
        best: tuple[int, str] | None = None
        for key, value in self.severity.items():
            if _matches(rule, key) and (best is None or len(key) > best[0]):
                best = (len(key), value)
        return best[1] if best else None

    def is_log(self, uri: str, language_id: str | None) -> bool:
        """Whether a document is a training log rather than code or a config."""
        if language_id == "log":
            return True
        name = uri.rstrip("/").rsplit("/", 1)[-1]
        return any(fnmatch.fnmatchcase(name, pattern) for pattern in self.log_patterns)


# Settings renamed since a release, old name -> new: the old one keeps working.
_RENAMED = {"lint_on": "check_on"}


def _matches(rule: str, selector: str) -> bool:
    """`checkpoint` and `checkpoint.` select a family; a full id selects itself."""
    return rule == selector or rule.startswith(selector.rstrip(".") + ".")


def _snake(name: str) -> str:
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


def _unwrap(raw: Any) -> Mapping[str, Any]:
    """Find the rootrank section in the shapes clients use."""
    if not isinstance(raw, Mapping):
        return {}
    if isinstance(raw.get("settings"), Mapping):
        raw = raw["settings"]
    if isinstance(raw.get("rootrank"), Mapping):
        return raw["rootrank"]
    # Not under "rootrank": ours only if it names one of our settings (not, say, another tool's section).
    known = {f.name for f in dataclasses.fields(Settings)} | set(_RENAMED)
    return raw if any(_snake(str(key)) in known for key in raw) else {}


def has_settings(raw: Any) -> bool:
    """Whether a client's value carries any rootrank setting (VS Code's pull model sends null)."""
    return bool(_unwrap(raw))


def parse_settings(raw: Any, base: Settings | None = None) -> tuple[Settings, list[str]]:
    """Build settings from a client's JSON value; returns the settings and one message per rejected value.

    Keys absent from `raw` keep their value from `base` (so a partial update changes only what it names).
    """
    base = base or Settings()
    section = _unwrap(raw)
    problems: list[str] = []
    changes: dict[str, Any] = {}
    known = {f.name for f in dataclasses.fields(Settings)}
    for key, value in section.items():
        name = _RENAMED.get(_snake(str(key)), _snake(str(key)))
        if name not in known:
            problems.append(f"unknown setting {key!r} (ignored)")
            continue
        try:
            changes[name] = _coerce(name, value)
        except (TypeError, ValueError) as exc:
            problems.append(f"setting {key!r}: {exc} (kept {getattr(base, name)!r})")
    return dataclasses.replace(base, **changes), problems


def _strings(value: Any) -> tuple[str, ...]:
    if isinstance(value, str):
        value = [v.strip() for v in value.split(",") if v.strip()]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise TypeError("expected a list of strings")
    return tuple(value)


def _coerce(name: str, value: Any) -> Any:
    if name in ("select", "ignore", "log_patterns"):
        return _strings(value)
    if name == "severity":
        if not isinstance(value, Mapping):
            raise TypeError("expected an object mapping entry ids to severities")
        out: dict[str, str] = {}
        for rule, level in value.items():
            level = _SEVERITY_ALIASES.get(str(level).lower(), str(level).lower())
            if level not in SEVERITIES:
                raise ValueError(f"{level!r} for {rule!r} is not one of {', '.join(SEVERITIES)}")
            out[str(rule)] = level
        return out
    if name == "check_on":
        if value not in ("change", "save"):
            raise ValueError("expected 'change' or 'save'")
        return value
    if name in ("debounce_ms", "progress_lines"):
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise TypeError("expected a non-negative integer")
        return value
    if name == "python":
        if not isinstance(value, str):
            raise TypeError("expected a path")
        return value
    raise ValueError("not supported")  # pragma: no cover - every field is handled above
