"""Every failure entry loads, and its real examples match (and its near misses do not)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from rootrank.diagnose.formats.prefixes import peel
from rootrank.diagnose.normalize import split_physical
from rootrank.library import Entry, load_library

LIBRARY = load_library()
REPO = Path(__file__).resolve().parents[1]
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


# Where an example may say it was copied from: a public address (an issue, a PR, a page), an upstream
# file as owner/repo:path (optionally @commit or a wheel version), or a real run kept as a fixture.
_PUBLIC_URL = re.compile(r"https?://")
_UPSTREAM_FILE = re.compile(r"[\w.-]+/[\w.-]+:\S")
_CORPUS_PREFIXES = ("shared/corpus/", "../shared/")


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.id)
def test_every_example_cites_where_it_was_copied_from(entry: Entry) -> None:
    """A message text is only trustworthy if a reader can open the place it was copied from."""
    for example in entry.examples_match:
        source = example.source
        if source.startswith("tests/fixtures/"):
            # a fixture must exist in this repository, or the citation points nowhere
            fixture = source.split()[0].rstrip(",;")
            assert (REPO / fixture).exists(), f"{entry.id}: fixture {fixture!r} does not exist"
            continue
        assert _PUBLIC_URL.search(source) or _UPSTREAM_FILE.match(source) or source.startswith(_CORPUS_PREFIXES), (
            f"{entry.id}: example {example.text[:80]!r} cites neither a public address, an owner/repo:path "
            f"upstream file nor a fixture: {source[:120]!r}"
        )
