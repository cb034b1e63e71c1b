"""The rank census finds line-start prefixes with a newline-led regex (formats/prefixes.py `_LineStarts`):
it must find exactly what `(?m)^` + the same body finds, in any slice of any buffer."""

from __future__ import annotations

import random
import re

import pytest

from rootrank.diagnose.formats.prefixes import RankCensus, _LineStarts

BODIES = [RankCensus._MPI.first.pattern, RankCensus._LOCAL.first.pattern]
# Whole prefixes, broken ones and noise, so that matches come at line starts, mid-line and across slices.
PIECES = [b"\n", b"\n", b"\r\n", b"[1,2]<stdout>", b"[0,13]<std", b"[default3]:", b"[node-1:7]:", b"[rank2]:",
          b"[x_y.z12]:", b"[1234567]:", b"[", b"]", b":", b"]:", b"<std", b",", b"1", b"23", b"rank", b"a", b" ",
          b"\xff"]


@pytest.mark.parametrize("body", BODIES)
def test_line_starts_find_what_a_multiline_caret_finds(body: bytes) -> None:
    reference = re.compile(rb"(?m)^" + body)
    fast = _LineStarts(body)
    generator = random.Random(11)
    matched = 0
    for _ in range(20_000):
        data = b"".join(generator.choice(PIECES) for _ in range(generator.randrange(0, 40)))
        start = generator.randrange(0, len(data) + 1)
        end = generator.randrange(start, len(data) + 1)
        expected = reference.findall(data, start, end)
        assert sorted(fast.findall(data, start, end)) == sorted(expected), (data, start, end)
        matched += bool(expected)
    assert matched > 500  # the pieces do make prefixes, at the start and after newlines


def test_census_reads_local_and_mpi_prefixes() -> None:
    census = RankCensus()
    log = b"[default3]:hello\n[1,7]<stderr>: boom\n[default12]: x\n[rank5]: y\n"
    census.sweep(log, 0, len(log))
    assert census.local_ranks == {3, 12}
    assert 7 in census.ranks and 5 in census.ranks
