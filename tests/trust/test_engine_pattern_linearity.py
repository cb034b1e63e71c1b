"""Every regular expression of the product itself (the module-level patterns of every `rootrank` module,
outside the entry library) runs in linear time on pumped lines of 64 KiB: log lines, config files and
launch scripts all reach them, and Python's `re` holds the GIL (a slow search freezes the language
server for every document).

Speed is a ratio here, never a number of seconds: each search of a pumped line is compared with a
linear pass of the regex engine over the same line (BASELINE), and with the same search on a line four
times shorter. A linear pattern costs a bounded multiple of the pass (a window of 200 characters tried
at every offset costs ~200 passes); a quadratic one costs thousands of passes at 64 KiB, and 16 times
as much for 4 times the line.
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import time
from collections.abc import Callable

import pytest

import rootrank
from tests.trust.test_pattern_linearity import repeated_chars

LINE = 64 * 1024
BASELINE = re.compile(r"(?:[\s\S])*?\Z")  # one step of the engine's loop per character
MAX_RATIO = 2000  # passes over the line a linear pattern may cost (a window of ~2000 characters per offset)


def engine_patterns() -> dict[str, re.Pattern[str] | re.Pattern[bytes]]:
    """`module.NAME` -> every compiled pattern held at module level (also inside tuples and lists)."""
    found: dict[str, re.Pattern[str] | re.Pattern[bytes]] = {}
    for info in pkgutil.walk_packages(rootrank.__path__, "rootrank."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            values = list(value) if isinstance(value, (tuple, list)) else [value]
            for i, item in enumerate(values):
                items = list(item) if isinstance(item, tuple) else [item]
                for candidate in items:
                    if isinstance(candidate, re.Pattern):
                        key = f"{info.name}.{name}" + (f"[{i}]" if len(values) > 1 else "")
                        found[key] = candidate
    return found


def _literal_runs(pattern: str) -> list[str]:
    """Fixed pieces of the pattern (what a hostile line would repeat to keep the engine busy)."""
    runs = re.findall(r"(?:[A-Za-z_ :=,/\"'#@<>-]|\\[.\[\]()|*+?])+", pattern)
    return sorted({r.replace("\\", "") for r in runs if len(r.strip()) >= 1}, key=len, reverse=True)[:5]


def pumped(pattern: str) -> dict[str, Callable[[int], str]]:
    """Line families: runs of each character the pattern repeats, alone, after, before and between its
    fixed pieces, and newlines (patterns compiled with MULTILINE meet whole files)."""
    # with a capital, a digit and a letter: what classes such as [A-Z] or \w start a match with
    chars = sorted(repeated_chars(pattern) | {"A", "7", "a"})
    families: dict[str, Callable[[int], str]] = {}
    for c in chars:
        families[f"run of {c!r}"] = lambda n, c=c: c * n
        families[f"run of {c!r} then '!'"] = lambda n, c=c: c * (n - 1) + "!"
        for lit in _literal_runs(pattern):
            families[f"{lit!r} then a run of {c!r}"] = lambda n, c=c, lit=lit: lit + c * (n - len(lit))
            families[f"({lit!r} {c!r}) repeated"] = lambda n, c=c, lit=lit: ((lit + c) * (n // (len(lit) + 1) + 1))[:n]
            families[f"run of {c!r} then {lit!r}"] = lambda n, c=c, lit=lit: c * (n - len(lit)) + lit
    families["newlines"] = lambda n: "\n" * n
    families["spaces and newlines"] = lambda n: " \n" * (n // 2)
    return families


def _cost(regex: re.Pattern[str] | re.Pattern[bytes], line: str, method: str = "search", repeat: int = 3) -> float:
    subject: str | bytes = line.encode("utf-8", "replace") if isinstance(regex.pattern, bytes) else line
    call = getattr(regex, method)
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        call(subject)
        best = min(best, time.perf_counter() - start)
    return best


def superlinear(regex: re.Pattern[str] | re.Pattern[bytes]) -> list[str]:
    """The line families on which `regex` grows faster than the line, or costs too many passes at 64 KiB.

    Growth is measured on every family at 2 and 8 KiB (cheap even for a quadratic pattern); the costliest
    families are then searched at 64 KiB and compared with the linear pass."""
    text = regex.pattern.decode("latin-1") if isinstance(regex.pattern, bytes) else regex.pattern
    families = pumped(text)
    costly: list[tuple[float, str]] = []
    for what, make in families.items():
        small = _cost(regex, make(LINE // 8), repeat=1)
        if small < 0.0003:
            continue  # nothing to measure: a few microseconds per kilobyte at most
        small = min(small, _cost(regex, make(LINE // 8)))  # a loaded machine, or the pattern?
        smaller = _cost(regex, make(LINE // 32))
        if small > 12 * smaller + 0.001:  # linear: 4x; quadratic: 16x
            return [f"{what}: 4x the line costs {small / max(smaller, 1e-9):.0f}x"]
        costly.append((small, what))
    for _, what in sorted(costly, reverse=True)[:2]:
        line = families[what](LINE)
        ratio = _cost(regex, line) / _cost(BASELINE, line, "fullmatch")
        if ratio > MAX_RATIO:
            return [f"{what}: {ratio:.0f} passes over a 64 KiB line"]
    return []


PATTERNS = engine_patterns()


def test_the_product_has_patterns_to_check() -> None:
    assert len(PATTERNS) > 40
    assert "rootrank.diagnose.launcher._RANK_VALUE" in PATTERNS


@pytest.mark.slow
@pytest.mark.parametrize("name", sorted(PATTERNS))
def test_every_engine_pattern_is_linear_at_64k(name: str) -> None:
    slow = superlinear(PATTERNS[name])
    assert not slow, f"/{PATTERNS[name].pattern!r}/ " + "; ".join(slow)


@pytest.mark.parametrize("pattern", [r"(?P<rank>\d+) \(local_rank: ", r"^\s*x", r"[A-Z][\w.]*Config"])
def test_the_measure_catches_quadratic_patterns(pattern: str) -> None:
    """The shapes the attacks found (a run before a literal, `^\\s*` over newlines in MULTILINE mode)."""
    assert superlinear(re.compile(pattern, re.MULTILINE))
