"""Anchors are chosen by how often they occur in the log itself, in a sample of its start, middle and end."""

from __future__ import annotations

import io
from collections import Counter
from pathlib import Path

from rootrank.diagnose import select as select_mod
from rootrank.diagnose.prefilter import AnchorChoice, Prefilter, windows_of

# Ordinary chatter that holds most of the literal "checkpointing.py failed to save" except its end.
CHATTER = b"".join(b"[rank%d]: INFO checkpointing.py: saved shard %d of step %d\n" % (r, r, s)
                   for s in range(300) for r in range(8))
LITERAL = b"checkpointing.py failed to save"


def _choice(sample: bytes, *literals: bytes) -> AnchorChoice:
    return AnchorChoice(literals, Counter(sample[::4]), sample)


def test_a_literal_anchors_on_a_window_the_log_does_not_hold() -> None:
    choice = _choice(CHATTER, LITERAL)
    anchor = choice.anchor_of[LITERAL]
    assert anchor in LITERAL
    assert CHATTER.count(anchor) == 0, anchor
    assert not choice.common


def test_longer_windows_win_ties() -> None:
    choice = _choice(b"nothing to see here\n" * 100, b"Watchdog caught collective operation timeout")
    assert len(choice.anchor_of[b"Watchdog caught collective operation timeout"]) == 12


def test_a_literal_common_in_the_log_is_reported() -> None:
    common = b"[rank3]: world_size 1024 ok\n" * 500
    choice = _choice(common, b"world_size")
    assert choice.common == [b"world_size"]


def test_few_lines_selected_from_chatter() -> None:
    prefilter = Prefilter([LITERAL.decode()], [], CHATTER)
    data = CHATTER + b"[rank3]: checkpointing.py failed to save shard 3\n" + CHATTER
    selected = prefilter.candidates(data, 0, len(data))
    assert [data[s: data.index(b"\n", s)] for s in selected] == [b"[rank3]: checkpointing.py failed to save shard 3"]


def test_the_middle_and_end_of_a_file_are_sampled(tmp_path: Path) -> None:
    # Chatter that only starts after the first chunk still steers the anchors away from itself.
    head = b"[rank0]: step 1 loss 2.0\n" * (select_mod.CHUNK_BYTES // 25 + 10)
    log = tmp_path / "run.log"
    log.write_bytes(head + CHATTER * 40)
    with open(log, "rb") as handle:
        later = select_mod._later_sample(handle, len(head), log.stat().st_size)
    assert later and later.endswith(b"\n") and b"checkpointing.py" in later
    assert select_mod._later_sample(io.BytesIO(head), 0, len(head)) == b""
    choice = _choice(head[:1 << 20] + later, LITERAL)
    assert CHATTER.count(choice.anchor_of[LITERAL]) == 0


def test_the_trie_regex_finds_what_an_alternation_sorted_by_length_finds() -> None:
    # The scan's regex is a trie of the anchors; the match at each place must still be the longest
    # anchor there (the confirmation looks up what that anchor stands for).
    import random
    import re

    from rootrank.diagnose.prefilter import _grouped_regex, _sorted_alternation
    from tests.conftest import FIXTURE_LOGS

    text = b"".join(log.read_bytes() for log in sorted(FIXTURE_LOGS.glob("*/log.txt")))
    rng = random.Random(5)
    words = sorted(set(re.findall(rb"[\w.:()=\[\] -]{4,12}", text)))
    for trial in range(20):
        anchors = set(rng.sample(words, 40))
        # Anchors that are prefixes of one another, as windows of one literal are.
        anchors |= {a[:n] for a in list(anchors)[:10] for n in (4, 6, 9) if len(a) > n}
        ordered = tuple(sorted(anchors))
        trie, sorted_alternation = _grouped_regex(ordered, 0), _sorted_alternation(ordered, 0)
        got = [(m.start(), m.group()) for m in trie.finditer(text)]
        assert got == [(m.start(), m.group()) for m in sorted_alternation.finditer(text)], trial
        assert got


def test_a_first_byte_pass_finds_what_finditer_finds_sparse_dense_or_turning_dense() -> None:
    # Where the first byte is rare memchr jumps between its places; where the chunk's head holds it often,
    # or it turns common further on, the regex engine takes over: the hits are finditer's in every case.
    from rootrank.diagnose import prefilter
    from rootrank.diagnose.prefilter import FirstBytePass, _grouped_regex

    anchors = (b"Watchdog caught", b"Watchdog", b"WORLD_SIZE", b"Warn")
    regex = _grouped_regex(anchors, 0)
    one = prefilter.SPARSE_STOP_BYTES
    plain = b"x" * (one - 1) + b"\n"
    hit = b"[rank3]: Watchdog caught collective operation timeout\n"
    near = b"[rank2]: Watch this WORLD_SIZ Warm W\n"
    logs = {
        "sparse": (plain * 40 + hit + plain * 40 + near) * 30,
        "dense from the start": (near + hit) * 4000,
        "turns dense": (plain * 40 + hit) * 30 + (near + hit) * 4000 + plain * 10 + hit,
    }
    for name, log in logs.items():
        for start, end in ((0, len(log)), (17, len(log) - 5), (len(log) // 3, len(log) // 2)):
            found: list[tuple[int, bytes]] = []
            FirstBytePass(b"W", regex).hits(log, start, end, found)
            assert found == [(m.start(), m.group()) for m in regex.finditer(log, start, end)], name
            assert found or start > 0, name

    class CountingRegex:
        """The pass's regex, counting the scans left to the regex engine's own skip loop."""

        def __init__(self) -> None:
            self.finditer_calls = 0

        def match(self, buf: bytes, pos: int, end: int) -> object:
            return regex.match(buf, pos, end)

        def finditer(self, buf: bytes, pos: int, end: int) -> object:
            self.finditer_calls += 1
            return regex.finditer(buf, pos, end)

    for name, memchr_only in (("sparse", True), ("dense from the start", False), ("turns dense", False)):
        counting = CountingRegex()
        FirstBytePass(b"W", counting).hits(logs[name], 0, len(logs[name]), [])  # type: ignore[arg-type]
        assert (counting.finditer_calls == 0) is memchr_only, name


def test_the_cover_covers_every_literal_and_costs_no_more_than_the_greedy_pick() -> None:
    import random

    rng = random.Random(7)
    alphabet = b"abcdefghijklmnopqrstuvwxyz:=_ -ABCDEFGHIJKLMNOP"
    for _ in range(40):
        literals = [bytes(rng.choice(alphabet) for _ in range(rng.randint(4, 16))) for _ in range(rng.randint(5, 60))]
        frequency = Counter({b: rng.randint(0, 20000) for b in alphabet})
        choice = AnchorChoice(literals, frequency)
        starts = {lit: frozenset(w[0] for w in windows_of(lit)) for lit in set(literals)}
        cover = choice._cover(sorted(set(literals)))
        assert all(starts[lit] & cover for lit in starts)
        greedy = choice._greedy(set(starts), starts, set())
        assert sum(map(choice.byte_cost, cover)) <= sum(map(choice.byte_cost, greedy)) + 1e-9
