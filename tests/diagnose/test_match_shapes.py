"""The matcher's memory of message shapes (digits blanked) gives the same matches as matching every
line afresh, also for lines that differ from a remembered one only in their numbers."""

from __future__ import annotations

from rootrank.diagnose.match import Matcher, digit_blind
from rootrank.library import load_library
from tests.conftest import FIXTURE_LOGS

_SHIFT = str.maketrans("0123456789", "3456789012")


def _afresh(matcher: Matcher, text: str) -> list[tuple[str, dict[str, str]]]:
    return [(p.name, fields) for p, fields in matcher._run(text, matcher._candidates(text))]


def test_shapes_match_like_every_line_afresh() -> None:
    library = load_library()
    remembering, fresh = Matcher(library), Matcher(library)
    texts = [line for log in sorted(FIXTURE_LOGS.glob("*/log.txt"))
             for line in log.read_text(errors="replace").splitlines()]
    # The same lines with other digits: each meets the shape its original left behind.
    texts += [t.translate(_SHIFT) for t in texts]
    texts += ["[Rank 7] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=12, OpType=ALLREDUCE)",
              "failed (exitcode: -6) local_rank: 3 (pid: 411) of binary: /usr/bin/python3",
              "failed (exitcode: 1) local_rank: 3 (pid: 411) of binary: /usr/bin/python3"]
    matched = 0
    for text in texts:
        got = [(p.name, fields) for p, fields in remembering.match(text)]
        assert got == _afresh(fresh, text), text
        matched += bool(got)
    assert matched > 100


def test_patterns_that_name_digits_are_not_blind() -> None:
    library = load_library()
    blind = {p.name: digit_blind(p) for p in library.patterns}
    assert any(blind.values()) and not all(blind.values())
    for pattern in library.patterns:
        if any(c.isdigit() for c in pattern.literal):
            assert not blind[pattern.name], pattern.name
