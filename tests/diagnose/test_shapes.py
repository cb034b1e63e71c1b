"""Shapes (diagnose/shapes.py): the digit classes a set of regexes cannot tell apart, and the per-line
work remembered per shape (prefix places, a rank or stamp named in the message, stacks, pattern
captures), which must equal that work done afresh on every line, including lines that differ from a
remembered one only in their digits."""

from __future__ import annotations

import random
import re

from rootrank.diagnose import stacks
from rootrank.diagnose.formats import inline, timestamps
from rootrank.diagnose.formats.prefixes import PREFIX_DIGITS, Dialect, apply_plan, peel, peel_plan
from rootrank.diagnose.lines import LineScanner
from rootrank.diagnose.shapes import ShapeMemo, digit_classes
from tests.conftest import FIXTURE_LOGS


def _classes(table: bytes | None) -> list[set[str]]:
    assert table is not None
    classes: dict[int, set[str]] = {}
    for digit in b"0123456789":
        classes.setdefault(table[digit], set()).add(chr(digit))
    return sorted(classes.values(), key=min)


def test_digit_classes_follow_what_the_regexes_name() -> None:
    assert _classes(digit_classes([r"\d+ ranks", r"[a-z]\w*", r".{2}"])) == [set("0123456789")]
    assert _classes(digit_classes([r"PG 0 Rank \d"])) == [{"0"}, set("123456789")]
    assert _classes(digit_classes([r"[0-4]x", r"7"])) == [set("01234"), set("5689"), {"7"}]
    assert _classes(digit_classes([r"[^3]"])) == [set("012456789"), {"3"}]
    assert _classes(digit_classes([re.escape("exitcode: -6")])) == [set("012345789"), {"6"}]
    # A regex that compares two places of a text gets no shapes at all.
    assert digit_classes([r"(\d)\1"]) is None
    assert digit_classes([r"(?P<a>x)?(?(a)\d|y)"]) is None


def _lines() -> list[str]:
    return [line for log in sorted(FIXTURE_LOGS.glob("*/log.txt"))
            for line in log.read_text(errors="replace").splitlines() if len(line) < 1024]


def _other_digits(text: str, table: bytes, rng: random.Random) -> str:
    """The text with each digit replaced by a random digit of its class (the same shape)."""
    classes = {d: [c for c in "0123456789" if table[ord(c)] == table[ord(d)]] for d in "0123456789"}
    return "".join(rng.choice(classes[c]) if c in classes else c for c in text)


def test_prefix_places_per_shape_equal_peeling_afresh() -> None:
    rng = random.Random(7)
    assert PREFIX_DIGITS is not None
    lines = _lines()
    dialects = [frozenset(), frozenset({"srun-label"}), frozenset({"pdsh-host", "container-name"})]
    for dialect in dialects:
        memo = ShapeMemo(PREFIX_DIGITS, lambda line, d=dialect: peel_plan(line, d))
        for line in lines + [_other_digits(line, PREFIX_DIGITS, rng) for line in lines]:
            assert apply_plan(line, memo(line)) == peel(line, dialect), line


def test_message_facts_and_stacks_per_shape_equal_afresh() -> None:
    rng = random.Random(11)
    facts = digit_classes((*inline.REGEXES, *timestamps.REGEXES))
    stack_digits = digit_classes(stacks.REGEXES)
    assert facts is not None and stack_digits is not None
    scanner = LineScanner()
    stacks_memo = ShapeMemo(stack_digits, stacks.stacks_in)
    lines = _lines()
    varied = lines + [_other_digits(line, facts, rng) for line in lines]
    varied += ["[PG ID 0 PG GUID 0(default_pg) Rank 12] Timeout at NCCL work",
               "[PG ID 4 PG GUID 10 Rank 12] Timeout at NCCL work",
               "[PG ID 0 PG GUID 0(default_pg) Rank 31] Timeout at NCCL work",
               "2026-13-40 25:61:00,000 - rank 3 nranks 8 month out of range",
               "[Rank 7] Watchdog caught collective operation timeout", "GLOBAL_RANK: 30, MEMBER: 31/64",
               "with rank id: 5", "Rank 4: boom", "[RANK 9] x", "[PG 0 Rank 2] y", "[PG 1 Rank 2] y"]
    varied += [_other_digits(text, facts, rng) for text in varied[-12:]]
    named = 0
    for text in varied:
        rank, stamp = scanner._fact_spans(text)
        got = (None if rank is None else int(text[rank[0]: rank[1]]),
               None if stamp is None else timestamps.parse_time(text[stamp[0]: stamp[1]]))
        assert got == (inline.rank_in_message(text), timestamps.find_time(text)), text
        named += got[0] is not None
        assert stacks_memo(text) == stacks.stacks_in(text), text
    assert named >= 16


def test_a_source_dialect_still_decides_peeling() -> None:
    # The plan memo is per source (its dialect): "3: " is a rank only where the source says so.
    probe = Dialect()
    for n in range(10):
        probe.observe(f"{n}: step {n}")
    dialect = probe.decide()
    assert peel("3: hello", dialect).rank == 3
    assert peel("3: hello").rank is None
