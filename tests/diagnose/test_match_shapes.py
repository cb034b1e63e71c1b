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


def test_continuation_patterns_are_found_with_the_prefilters_anchors_installed() -> None:
    # The prefilter chooses anchors only for the literals it selects lines by; a continuation pattern's
    # literal (`follows`) has none, and the matcher must still find it, case-folded ones too.
    import dataclasses

    from rootrank.diagnose import prefilter_literals
    from rootrank.diagnose.prefilter import Prefilter
    from rootrank.library import Library

    library = load_library()
    entry = library.entries["compile.recompile-limit"]
    folded = tuple(dataclasses.replace(p, ignore_case=True) if p.name == "limit-last-reason" else p
                   for p in entry.patterns)
    library = Library(entries={**library.entries, entry.id: dataclasses.replace(entry, patterns=folded)},
                      problems=[])
    exact, folded_literals = prefilter_literals(library)
    anchored = Matcher(library, Prefilter(exact, folded_literals, b"step 1 | loss 0.5\n" * 100).anchors)
    names = {p.name for p in library.patterns if p.follows}
    assert {"limit-function", "limit-last-reason", "worker-exit-detail"} <= names
    found = {p.name for text in ("   function: 'run' (train.py:5)", "   LAST REASON: L['x'].size()[0] == 8",
                                 "Worker exit detail: Worker unexpectedly exits with a connection error code 2.")
             for p, _ in anchored.match(text)}
    assert {"limit-function", "limit-last-reason", "worker-exit-detail"} <= found
