"""The engine's matcher (one pattern per entry and line, tried in name order) yields the fields an entry's
example declares, not only the test's own loop over the patterns in file order."""

from __future__ import annotations

import pytest

from rootrank.diagnose.match import Matcher
from rootrank.library import Entry, load_library
from tests.test_entries import normalize_text

LIBRARY = load_library()
MATCHER = Matcher(LIBRARY)
# Case-folded literals are found through the prefilter's anchors, which this direct use of the matcher lacks.
WITH_FIELDS = sorted((e for e in LIBRARY.entries.values()
                      if any(x.fields for x in e.examples_match) and not any(p.ignore_case for p in e.patterns)),
                     key=lambda e: e.id)
# Entries older than this test where an earlier pattern in name order, without the capture, matches the
# example's line first: the field is lost in the engine. Kept visible until their patterns are renamed or
# made exclusive.
KNOWN = {"checkpoint.use-reentrant-explicit", "deepspeed.op-build-failed", "distributed.rendezvous"}


def _case(entry: Entry) -> object:
    marks = [pytest.mark.xfail(reason="an earlier pattern in name order matches first", strict=True)] \
        if entry.id in KNOWN else []
    return pytest.param(entry, id=entry.id, marks=marks)


@pytest.mark.parametrize("entry", [_case(e) for e in WITH_FIELDS])
def test_engine_captures_the_declared_fields(entry: Entry) -> None:
    for example in entry.examples_match:
        if not example.fields:
            continue
        got: dict[str, str] = {}
        for line in normalize_text(example.text):
            for pattern, fields in MATCHER.match(line.text):
                if pattern.entry_id == entry.id:
                    got = dict(fields)
                    break
            if got:
                break
        for key, value in example.fields.items():
            assert got.get(key) == value, f"{entry.id}: engine field {key}={got.get(key)!r}, expected {value!r}"
