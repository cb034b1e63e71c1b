"""Every failure entry loads, and its real examples match (and its near misses do not)."""

from __future__ import annotations

import pytest

from rootrank.diagnose.formats.prefixes import peel
from rootrank.diagnose.normalize import split_physical
from rootrank.library import Entry, load_library

LIBRARY = load_library()
ENTRIES = sorted(LIBRARY.entries.values(), key=lambda e: e.id)


def test_library_loads_without_problems() -> None:
    assert not LIBRARY.problems, "\n".join(str(p) for p in LIBRARY.problems)


class _Line:
    def __init__(self, text: str) -> None:
        self.text = text


def normalize_text(text: str) -> list[_Line]:
    """The example as the pipeline sees it: logical lines with launcher prefixes removed."""
    return [_Line(peel(part).text) for raw in text.split("\n") for part in split_physical(raw)]


def _matches(entry: Entry, text: str) -> dict[str, str] | None:
    for line in normalize_text(text):
        for pattern in entry.patterns:
            if (pattern.literal.lower() in line.text.lower()) if pattern.ignore_case else (pattern.literal in line.text):
                m = pattern.regex.search(line.text)
                if m:
                    return {k: v for k, v in m.groupdict().items() if v is not None}
    return None


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_examples_match(entry: Entry) -> None:
    for example in entry.examples_match:
        fields = _matches(entry, example.text)
        assert fields is not None, f"{entry.id}: example does not match: {example.text[:200]!r}"
        for key, value in example.fields.items():
            assert fields.get(key) == value, f"{entry.id}: field {key}={fields.get(key)!r}, expected {value!r}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_near_misses_do_not_match(entry: Entry) -> None:
    for text in entry.examples_no_match:
        assert _matches(entry, text) is None, f"{entry.id}: near miss matches: {text[:200]!r}"


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_literal_is_in_its_examples(entry: Entry) -> None:
    """The prefilter literal must be a substring of what the pattern matches, or the prefilter hides it."""
    for pattern in entry.patterns:
        for example in entry.examples_match:
            for line in normalize_text(example.text):
                m = pattern.regex.search(line.text)
                if m:
                    hay = line.text.lower() if pattern.ignore_case else line.text
                    lit = pattern.literal.lower() if pattern.ignore_case else pattern.literal
                    assert lit in hay, f"{entry.id}/{pattern.name}: literal {pattern.literal!r} not in a matching line"
