"""Every log pattern of the library runs in (near) linear time on adversarial lines, and the loader's
screen (`regex_safety.backtracking_risk`) refuses the classic catastrophic shapes.

Lines reach the patterns after normalize.py, which caps a logical line at 64 KiB characters, so that is
the size of the longest adversarial line here.
"""

from __future__ import annotations

import time

import pytest

from rootrank.library import LogPattern, load_library
from rootrank.regex_safety import backtracking_risk

try:  # Python 3.11+
    import re._parser as sre_parse  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover
    import sre_parse  # type: ignore[no-redef]

LINE = 64 * 1024
RUN = 16 * 1024
# Per search of one 64 KiB line. The slowest library patterns (bounded windows such as `[\w./-]{0,200}` tried
# at every offset) take ~0.15 s on an idle core; twice that leaves room for a loaded CI machine.
BUDGET_S = 0.5
_CATEGORY_CHARS = {"CATEGORY_DIGIT": "7", "CATEGORY_NOT_DIGIT": "a", "CATEGORY_SPACE": " ",
                   "CATEGORY_NOT_SPACE": "x", "CATEGORY_WORD": "w", "CATEGORY_NOT_WORD": "-",
                   "CATEGORY_LINEBREAK": "\n", "CATEGORY_NOT_LINEBREAK": "z"}


def _class_chars(av: list) -> list[str]:
    """Characters a character class accepts (a few representatives)."""
    out: list[str] = []
    negated = False
    for op, value in av:
        name = str(op)
        if name == "NEGATE":
            negated = True
        elif name == "LITERAL":
            out.append(chr(value))
        elif name == "RANGE":
            out += [chr(value[0]), chr(value[1])]
        elif name == "CATEGORY":
            out.append(_CATEGORY_CHARS.get(str(value), "a"))
    if negated:
        return [c for c in "a0 _-.:/(x" if c not in out][:3]
    return out


def repeated_chars(pattern: str) -> set[str]:
    """Characters that the pattern's repeats (`*`, `+`, `{m,n}`) consume: where backtracking lives."""
    found: set[str] = set()

    def firsts(items: list) -> list[str]:
        out: list[str] = []
        for op, av in items:
            name = str(op)
            if name == "LITERAL":
                out.append(chr(av))
            elif name == "NOT_LITERAL":
                out.append("a" if chr(av) != "a" else "b")
            elif name == "ANY":
                out += ["a", " ", "."]
            elif name == "IN":
                out += _class_chars(list(av))
            elif name == "SUBPATTERN":
                out += firsts(list(av[-1]))
            elif name == "BRANCH":
                for branch in av[1]:
                    out += firsts(list(branch))
            elif name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                out += firsts(list(av[2]))
        return out

    def walk(items: list) -> None:
        for op, av in items:
            name = str(op)
            if name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT"):
                found.update(firsts(list(av[2])))
                walk(list(av[2]))
            elif name == "SUBPATTERN":
                walk(list(av[-1]))
            elif name == "BRANCH":
                for branch in av[1]:
                    walk(list(branch))
            elif name in ("ASSERT", "ASSERT_NOT"):
                walk(list(av[1]))

    walk(list(sre_parse.parse(pattern)))
    return found


def adversarial_lines(pattern: LogPattern, examples: list[str], size: int = RUN, line: int = LINE) -> dict[str, str]:
    """Runs of each repeated character (bare, and after the literal), the literal and near-matches repeated,
    examples with a long middle; plus one LINE-long line mixing them all with the literal last."""
    chars = sorted(repeated_chars(pattern.regex.pattern))
    literal = pattern.literal
    filler = chars[-1] if chars else " "
    lines: dict[str, str] = {}
    for c in chars:
        lines[f"run of {c!r}, literal last"] = c * size + literal
        lines[f"literal then run of {c!r}"] = literal + c * size
    if chars:
        lines["literal + alternating chars"] = (literal + "".join(chars) * size)[:size]
    lines["literal repeated"] = literal * (size // len(literal) + 1)
    lines["literal with spaces repeated"] = (literal + " ") * (size // len(literal) + 1)
    for i, example in enumerate(examples[:3]):
        near = example[:-1] if len(example) > 1 else example
        lines[f"near-match {i} repeated"] = near * (size // max(len(near), 1) + 1)
        lines[f"example {i} without its end, then a run"] = near + filler * size
        lines[f"example {i} with a long middle"] = example[: len(example) // 2] + filler * size + example[-8:]
    mixed = "".join(c * 61 for c in chars) + literal[:-1] + " " + (examples[0][:-1] if examples else "")
    lines["64 KiB line"] = (mixed * (line // max(len(mixed), 1) + 1))[: line - len(literal)] + literal
    return lines


LIBRARY = load_library()
PATTERNS = sorted(LIBRARY.patterns, key=lambda p: (p.entry_id, p.name))


def _seconds(pattern: LogPattern, line: str) -> float:
    start = time.perf_counter()
    pattern.regex.search(line)
    return time.perf_counter() - start


@pytest.mark.slow
@pytest.mark.parametrize("entry_id", sorted({p.entry_id for p in PATTERNS}))
def test_every_pattern_is_linear_on_adversarial_lines(entry_id: str) -> None:
    """Each search of an adversarial line stays under BUDGET_S, and a line 4x longer costs ~4x, not 16x."""
    entry = LIBRARY.entries[entry_id]
    examples = [e.text for e in entry.examples_match] + list(entry.examples_no_match)
    slow: list[str] = []
    for pattern in (p for p in PATTERNS if p.entry_id == entry_id):
        quarters: dict[str, str] | None = None
        for what, line in adversarial_lines(pattern, examples).items():
            took = _seconds(pattern, line)
            if took < 0.03:
                continue
            took = min(took, _seconds(pattern, line), _seconds(pattern, line))  # a loaded machine, or the pattern?
            # the same line built 4x shorter
            quarters = quarters or adversarial_lines(pattern, examples, RUN // 4, LINE // 4)
            quarter = min(_seconds(pattern, quarters[what]) for _ in range(3))
            if took > BUDGET_S or took > 8 * quarter + 0.05:
                slow.append(f"{pattern.name} /{pattern.regex.pattern}/ on {what} ({len(line)} chars): {took:.2f}s "
                            f"(a quarter of the line: {quarter:.3f}s)")
                break  # one slow line is enough to tell
    assert not slow, "\n".join(slow)


def test_adversarial_generator_finds_the_repeats() -> None:
    assert repeated_chars(r"(a+)+b") >= {"a"}
    assert repeated_chars(r"x\d{1,6}y") >= {"7"}
    assert repeated_chars(r"[^:]*:") & {"a", "0"}
    assert " " in repeated_chars(r"foo\s+bar")


# --------------------------------------------------------------------------- the loader's screen

CATASTROPHIC = [
    r"(a+)+b",
    r"(a|a)*b",
    r"(.*)*x",
    r"(\w+\s?)+$",
    r"(a*)*b",
    r"((ab)*)+c",
    r"(x+x+)+y",
    r"(\d+)*\.",
    r"(.+)+:",
    r"(a|aa)+$",
]

NORMAL = [
    r"CUDA out of memory\. Tried to allocate (?P<size>[\d.]+ [KMG]iB)",
    r"\[rank(?P<rank>\d{1,6})\]: RuntimeError",
    r"^(?P<host>[\w.-]+):(?P<rank>\d+): ",
    r"NCCL WARN .*? timeout",
    r"Watchdog caught collective operation timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<optype>\w+)",
    r"exitcode\s*:\s*(?P<exitcode>-?\d+)",
    r"(?:ValueError|KeyError|TypeError): .+",
    r"(?i)loss (?:is )?(?:nan|inf)",
    r"[A-Za-z_][\w.]*Error: ",
    r"(?:\d{1,3}\.){3}\d{1,3}",
]


# Nested *bounded* repeats are as bad: `(?:a{1,100}){1,100}b` takes seconds on 26 a's.
BOUNDED_CATASTROPHIC = [r"(?:a{1,100}){1,100}b", r"(?:\w{1,50}\s?){1,50}$", r"(a{0,999}){0,999}b"]


@pytest.mark.parametrize("pattern", CATASTROPHIC + BOUNDED_CATASTROPHIC)
def test_backtracking_risk_refuses_catastrophic_patterns(pattern: str) -> None:
    assert backtracking_risk(pattern), f"{pattern} was accepted"


@pytest.mark.parametrize("pattern", NORMAL)
def test_backtracking_risk_accepts_normal_patterns(pattern: str) -> None:
    assert backtracking_risk(pattern) == "", backtracking_risk(pattern)


def test_every_library_pattern_passes_the_screen() -> None:
    risky = [f"{p.entry_id}/{p.name}: {backtracking_risk(p.regex.pattern)}" for p in PATTERNS
             if backtracking_risk(p.regex.pattern)]
    assert not risky, risky


def test_catastrophic_patterns_really_are_slow() -> None:
    """The screen's reason to exist: `(a+)+b` takes exponential time where the library's patterns do not."""
    import re

    line = "a" * 20 + "!"
    start = time.perf_counter()
    re.search(r"(a+)+b", line)
    assert time.perf_counter() - start > 0.02


@pytest.mark.parametrize(("pattern", "literal", "fold", "required"), [
    (r"(?:srun|yhrun): error: ", "run: error: ", False, True),
    (r"(?:Out of memory|Memory cgroup out of memory): Kill", "out of memory: kill", True, True),
    (r"failed \(exitcode: (?P<code>-(?:11|7))\)", "failed (exitcode: -", False, True),
    (r"\buse_reentrant\s?=\s?True", "use_reentrant=True", False, False),
    (r"foo(?:bar)?baz", "barbaz", False, False),
    (r"(?:ncclSystemError|ncclInvalidUsage): ", "Error: ", False, False),
])
def test_literal_must_be_in_every_match(pattern: str, literal: str, fold: bool, required: bool) -> None:
    from rootrank.regex_safety import literal_is_required

    assert literal_is_required(pattern, literal, fold) is required
