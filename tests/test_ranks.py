"""`rootrank.ranks.RankSet` behaves as a set of ints at every size (plain set, bitmap, ranks outside the
bitmap), writes the ranges people write, and stays small for a million ranks."""

from __future__ import annotations

import pickle
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank.model import ranks_text
from rootrank.ranks import MAX_BIT_RANK, SMALL, RankHosts, RankSet

# Ranks near 0 (dense, to make runs), a few negative, a few past the bitmap; sizes on both sides of SMALL.
RANK = st.one_of(st.integers(0, 3 * SMALL), st.integers(-3, -1), st.integers(MAX_BIT_RANK, MAX_BIT_RANK + 5))
RANKS = st.one_of(st.sets(RANK, max_size=40), st.builds(lambda n, gaps: set(range(n)) - gaps,
                                                         st.integers(0, 3 * SMALL), st.sets(st.integers(0, 3 * SMALL))))


def _ranges_written_out(ranks: set[int]) -> str:
    """The reference the rank sets are held to: runs of consecutive ints, built here from a sorted list
    (not through RankSet, which `ranks_text` now calls)."""
    values = sorted(ranks)
    parts: list[str] = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else f"{values[i]}-{values[j]}")
        i = j + 1
    return ",".join(parts)


@settings(max_examples=150, deadline=None)
@given(RANKS, RANKS, st.sets(RANK, max_size=10))
def test_a_rank_set_is_a_set(a: set[int], b: set[int], probes: set[int]) -> None:
    left, right = RankSet(a), RankSet(b)
    assert len(left) == len(a) and list(left) == sorted(a) and bool(left) == bool(a)
    assert left.text() == _ranges_written_out(a) and ranks_text(a) == left.text()
    assert left.first() == min(a, default=None) and left.last() == max(a, default=None)
    for probe in probes | set(list(a)[:5]):
        assert (probe in left) == (probe in a)
    assert list(left | right) == sorted(a | b)
    assert list(left - right) == sorted(a - b)
    assert list(left & right) == sorted(a & b)
    assert (left <= right) == (a <= b) and (left >= right) == (a >= b)
    assert (left == right) == (a == b) and left == a
    grown = left.copy()
    grown |= right
    assert grown == a | b and left == a  # the copy is a copy
    assert pickle.loads(pickle.dumps(left)) == left
    for rank in list(a)[:20]:
        left.discard(rank)
    assert left == a - set(list(a)[:20])


def test_ranges_of_a_world() -> None:
    world = RankSet()
    world.add_range(0, 1_000_000)
    seen = RankSet(range(1_000_000))
    seen.discard(333_333)
    assert world.text() == "0-999999" and len(world) == 1_000_000
    assert list(world - seen) == [333_333]
    assert seen.text() == "0-333332,333334-999999"
    assert seen.ranges() == [(0, 333_332), (333_334, 999_999)]


def test_a_million_ranks_cost_bits() -> None:
    ranks = RankSet(range(0, 2_000_000, 2))
    size = sys.getsizeof(ranks._bits) + sys.getsizeof(ranks._small)  # what the set holds: the bitmap
    assert len(ranks) == 1_000_000 and size < 600_000, size  # a set of the same ints: about 60 MB


def test_a_frozen_set_is_read_only_and_hashable() -> None:
    frozen = RankSet([1, 2, 3]).freeze()
    assert hash(frozen) == hash(RankSet([1, 2, 3]).freeze())
    with pytest.raises(TypeError):
        frozen.add(4)
    with pytest.raises(TypeError):
        hash(RankSet([1]))
    assert frozen | {4} == {1, 2, 3, 4} and frozen == {1, 2, 3}  # a union is a new, writable set


def test_ranks_outside_the_bitmap_do_not_make_it_slow() -> None:
    huge = RankSet(range(MAX_BIT_RANK, MAX_BIT_RANK + 3 * SMALL))  # each add stays O(1): no re-spilling
    assert len(huge) == 3 * SMALL and huge.first() == MAX_BIT_RANK


@settings(max_examples=100, deadline=None)
@given(st.lists(st.tuples(st.one_of(st.integers(0, 5000), st.integers(-3, -1), st.integers(1 << 23, (1 << 23) + 3)),
                          st.sampled_from(["node-a", "node-b", "10.0.0.1", ""])), max_size=60))
def test_rank_hosts_is_the_first_host_of_each_rank(pairs: list[tuple[int, str]]) -> None:
    hosts = RankHosts()
    expected: dict[int, str] = {}
    for rank, host in pairs:
        hosts.add(rank, host)
        expected.setdefault(rank, host)
    assert dict(hosts) == expected and len(hosts) == len(expected)
    assert all((rank in hosts) == (rank in expected) for rank, _ in pairs)
    assert hosts.get(-99) is None and list(hosts) == sorted(expected)
    assert hosts.ranks_where(lambda h: h.startswith("node")) == sorted(r for r, h in expected.items()
                                                                      if h.startswith("node"))


def test_rank_hosts_costs_an_int_a_rank() -> None:
    hosts = RankHosts()
    for rank in range(1_000_000):  # 8 ranks a host: 125,000 hosts, past the cap of 65,536
        hosts.add(rank, f"10.{rank >> 19}.{rank >> 11 & 255}.{rank >> 3 & 255}")
    assert len(hosts.hosts()) == RankHosts.MAX_HOSTS and len(hosts) == 8 * RankHosts.MAX_HOSTS
    assert hosts[8 * RankHosts.MAX_HOSTS - 1] == "10.0.255.255" and hosts.get(999_999) is None
    assert sys.getsizeof(hosts._dense) < 8 << 20
