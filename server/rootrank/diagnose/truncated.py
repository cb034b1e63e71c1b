"""Lines cut short: a message pasted at terminal or issue width, or an excerpt that stops mid-line.

For every pattern whose literal is spelled out at its top level, a second regex is derived that
accepts any line ending anywhere after that literal, as long as what is there is a beginning of
what the pattern matches: `CUDA out of memory. Tried to allocate 100.00 MiB (GPU 0; 12.00 GiB total`
and nothing after still matches the OOM entry. The head up to the literal is required, the rest
may stop at any character (captures that were cut are simply absent), and the line must end where
it stops (`\\Z`), so a complete line that says something else never matches this way. The pipeline
tries these only on short lines that matched nothing as printed.
"""

from __future__ import annotations

import hashlib
import importlib
import os
import re
import sys
from dataclasses import replace
from functools import lru_cache
from pathlib import Path
from typing import Any

from rootrank.cachefiles import cache_dir, read_json, write_json
from rootrank.library import Library, LogPattern

# The parser behind `re` (re._parser from Python 3.11, sre_parse before): the tree a pattern compiles from.
_NEW_RE = sys.version_info >= (3, 11)
sre: Any = importlib.import_module("re._constants" if _NEW_RE else "sre_constants")
sre_parse: Any = importlib.import_module("re._parser" if _NEW_RE else "sre_parse")

MAX_TRUNCATED_LINE = 2000  # pasted lines are cut at a terminal's or a page's width, not after kilobytes
_CATEGORIES = {
    sre.CATEGORY_DIGIT: r"\d", sre.CATEGORY_NOT_DIGIT: r"\D", sre.CATEGORY_SPACE: r"\s",
    sre.CATEGORY_NOT_SPACE: r"\S", sre.CATEGORY_WORD: r"\w", sre.CATEGORY_NOT_WORD: r"\W",
}
_AT = {sre.AT_BEGINNING: "^", sre.AT_END: "$", sre.AT_BEGINNING_STRING: r"\A", sre.AT_END_STRING: r"\Z",
       sre.AT_BOUNDARY: r"\b", sre.AT_NON_BOUNDARY: r"\B"}


class _UnsupportedError(Exception):
    pass


def _char(code: int) -> str:
    return re.escape(chr(code))


def _in_class(items: Any) -> str:
    out: list[str] = []
    for op, av in items:
        if op is sre.NEGATE:
            out.insert(0, "^")
        elif op is sre.LITERAL:
            ch = chr(av)
            out.append("\\" + ch if ch in "\\]^-[" else ch if ch.isprintable() and ch != " " else _char(av))
        elif op is sre.RANGE:
            out.append(f"{_char(av[0])}-{_char(av[1])}")
        elif op is sre.CATEGORY:
            out.append(_CATEGORIES[av])
        else:
            raise _UnsupportedError(op)
    return "[" + "".join(out) + "]"


class _Writer:
    def __init__(self, names: dict[int, str]) -> None:
        self.names = names

    def seq(self, items: Any, capture: bool = True) -> str:
        return "".join(self.item(op, av, capture) for op, av in items)

    def item(self, op: Any, av: Any, capture: bool) -> str:
        if op is sre.LITERAL:
            return _char(av)
        if op is sre.NOT_LITERAL:
            return "[^" + _char(av) + "]"
        if op is sre.ANY:
            return "."
        if op is sre.IN:
            return _in_class(av)
        if op is sre.AT:
            return _AT[av]
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            low, high, sub = av
            body = "(?:" + self.seq(sub, capture) + ")"
            count = "{" + f"{low},{'' if high is sre.MAXREPEAT else high}" + "}"
            suffix = "?" if op is sre.MIN_REPEAT else "+" if op is getattr(sre, "POSSESSIVE_REPEAT", None) else ""
            return body + count + suffix
        if op is sre.SUBPATTERN:
            group, add, dele, sub = av
            if add or dele:
                raise _UnsupportedError("inline flags")
            inner = self.seq(sub, capture)
            if group is not None and capture and group in self.names:
                return f"(?P<{self.names[group]}>{inner})"
            return f"(?:{inner})"
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.seq(b, capture) for b in av[1]) + ")"
        if op in (sre.ASSERT, sre.ASSERT_NOT):
            direction, sub = av
            kind = ("=" if op is sre.ASSERT else "!") if direction == 1 else ("<=" if op is sre.ASSERT else "<!")
            return f"(?{kind}{self.seq(sub, False)})"
        if op is getattr(sre, "ATOMIC_GROUP", None):
            return "(?>" + self.seq(av, capture) + ")"
        raise _UnsupportedError(op)

    def prefix(self, items: list[Any]) -> str:
        """Any beginning of what `items` match (the whole included); the caller requires the end of text."""
        if not items:
            return ""
        (op, av), rest = items[0], items[1:]
        full = self.item(op, av, True) + self.prefix(rest)
        part = self.part(op, av)
        return f"(?:{full}|{part})" if part else f"(?:{full})?"

    def part(self, op: Any, av: Any) -> str:
        """A proper beginning of one element, without captures ("" when the element is one character)."""
        if op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
            _, high, sub = av
            inner = self.prefix_plain(list(sub))
            top = "" if high is sre.MAXREPEAT else str(max(high - 1, 0))
            return "(?:" + self.seq(sub, False) + "){0," + top + "}" + (f"(?:{inner})?" if inner else "")
        if op is sre.SUBPATTERN:
            return self.prefix_plain(list(av[3]))
        if op is sre.BRANCH:
            return "(?:" + "|".join(self.prefix_plain(list(b)) or "" for b in av[1]) + ")"
        return ""

    def prefix_plain(self, items: list[Any]) -> str:
        if not items:
            return ""
        (op, av), rest = items[0], items[1:]
        full = self.item(op, av, False) + self.prefix_plain(rest)
        part = self.part(op, av)
        return f"(?:{full}|{part})" if part else f"(?:{full})?"


def _literal_end(items: list[Any], literal: str) -> int | None:
    """The index just after the top-level run of literal characters that spells `literal`."""
    text = "".join(chr(av) if op is sre.LITERAL else "\0" for op, av in items)
    at = text.find(literal)
    return None if at < 0 else at + len(literal)


@lru_cache(maxsize=2048)
def truncated_source(pattern: str, literal: str) -> str | None:
    """The regex accepting a line cut anywhere after `literal`, or None when it cannot be derived."""
    try:
        parsed = sre_parse.parse(pattern)
        names = {index: name for name, index in parsed.state.groupdict.items()}
        items = list(parsed)
        end = _literal_end(items, literal)
        if end is None or end == len(items):
            return None
        writer = _Writer(names)
        return writer.seq(items[:end]) + writer.prefix(items[end:]) + r"\Z"
    except (_UnsupportedError, re.error, RecursionError, KeyError, AttributeError):
        return None


def _wanted(p: LogPattern) -> bool:
    return not (p.follows or p.ignore_case or p.after)


def _cache_file(pairs: list[tuple[str, str]]) -> Path:
    """Where the derived sources of these (pattern, literal) pairs are kept: keyed by the pairs, this
    module's own source (the derivation) and the Python version (the parser it reads trees from)."""
    digest = hashlib.sha1(sys.version.encode())
    try:
        digest.update(Path(__file__).read_bytes())
    except OSError:
        digest.update(b"?")
    for pattern, literal in pairs:
        digest.update(f"{len(pattern)}:{pattern}{len(literal)}:{literal}".encode("utf-8", "surrogatepass"))
    return cache_dir() / f"truncated-{digest.hexdigest()[:20]}.json"


def _derived_sources(pairs: list[tuple[str, str]]) -> list[str | None]:
    """`truncated_source` of every pair. Deriving them parses every pattern (about a tenth of a second
    per run, more than reading a small log), so the results are kept on disk between runs; a cache
    file is used only when it holds exactly these pairs, written atomically, and any failure to read
    or write it just means deriving them again. ROOTRANK_NO_CACHE=1 turns it off."""
    if os.environ.get("ROOTRANK_NO_CACHE"):
        return [truncated_source(pattern, literal) for pattern, literal in pairs]
    file = _cache_file(pairs)
    data = read_json(file)
    rows = data.get("sources") if isinstance(data, dict) else None
    if (isinstance(rows, list) and len(rows) == len(pairs)
            and all(isinstance(row, list) and len(row) == 3 and row[:2] == list(pair)
                    and (row[2] is None or isinstance(row[2], str)) for row, pair in zip(rows, pairs, strict=True))):
        return [row[2] for row in rows]
    sources = [truncated_source(pattern, literal) for pattern, literal in pairs]
    write_json(file, {"sources": [[*pair, source] for pair, source in zip(pairs, sources, strict=True)]})
    return sources


def truncated_patterns(patterns: tuple[LogPattern, ...],
                       sources: dict[tuple[str, str], str | None] | None = None) -> tuple[LogPattern, ...]:
    """Patterns for cut lines, one per pattern that has one (continuation lines excluded); `sources`
    holds sources already derived (from the cache on disk)."""
    out = []
    for p in patterns:
        if not _wanted(p):
            continue
        key = (p.pattern, p.literal)
        source = sources[key] if sources is not None and key in sources else truncated_source(*key)
        if source is not None:
            out.append(replace(p, pattern=source, name=p.name + "~cut"))
    return tuple(out)


_LIBRARIES: dict[int, tuple[Library, Library]] = {}


def truncated_library(library: Library) -> Library:
    """The library's entries with their cut-line patterns instead of their own (built once per library)."""
    cached = _LIBRARIES.get(id(library))
    if cached is not None and cached[0] is library:
        return cached[1]
    pairs = sorted({(p.pattern, p.literal) for entry in library.entries.values() for p in entry.patterns
                    if _wanted(p)})
    sources = dict(zip(pairs, _derived_sources(pairs), strict=True))
    entries = {key: replace(entry, patterns=truncated_patterns(entry.patterns, sources))
               for key, entry in library.entries.items()}
    cut = Library(entries={k: e for k, e in entries.items() if e.patterns}, problems=[])
    _LIBRARIES[id(library)] = (library, cut)
    return cut


_WHOLE_END = frozenset(".!?;)]}>*\"'")


def may_be_cut(text: str) -> bool:
    """Whether a line can be a message cut short: short enough, not ending the way a whole message or
    record ends (a full stop, a closing bracket or quote, Slurm's `***`), and not a source line
    echoed in a traceback (a `#` comment)."""
    if len(text) > MAX_TRUNCATED_LINE:
        return False
    last = text.rstrip()[-1:]
    return bool(last) and last not in _WHOLE_END and " # " not in text
