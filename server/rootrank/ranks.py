"""`RankSet`: a set of ranks that costs bits, not objects, so a cascade of a million ranks fits in KiB.

A job with a million ranks, each printing one timeout, needs "which ranks saw this" per entry, for the
whole log and for the report; as Python sets of ints those cost about 60 bytes a rank each, hundreds of
MiB in all. A `RankSet` keeps its first SMALL ranks in a plain set (fast, and cheap for the usual few
ranks) and moves to a bitmap (one bit a rank up to MAX_BIT_RANK) past that; a rank the bitmap cannot hold
(negative, or larger) stays in the plain set. It iterates in ascending order and writes itself as ranges
(`0-2,4-7`), the form the report and the JSON use at any size. `freeze()` makes it read-only (and
hashable) for the result records. `RankHosts` maps ranks to hosts in the same spirit.
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Iterable, Iterator, Mapping, MutableSet
from typing import Any

SMALL = 4096  # ranks kept in the plain set before the bitmap takes over (the usual job stays a set)
MAX_BIT_RANK = 1 << 26  # the largest bitmap is 8 MiB; a larger "rank" stays in the plain set

# For each byte value, the positions of its set bits, low first.
_BITS_OF: tuple[tuple[int, ...], ...] = tuple(tuple(k for k in range(8) if value >> k & 1) for value in range(256))


class RankSet(MutableSet[int]):
    """A mutable set of ints for ranks (see the module docstring); iteration is ascending."""

    __slots__ = ("_bit_count", "_bits", "_frozen", "_small")

    def __init__(self, ranks: Iterable[int] = ()) -> None:
        self._small: set[int] = set()
        self._bits = bytearray()  # empty until the plain set outgrows SMALL
        self._bit_count = 0
        self._frozen = False
        if isinstance(ranks, RankSet):
            self._small = set(ranks._small)
            self._bits = bytearray(ranks._bits)
            self._bit_count = ranks._bit_count
        else:
            self.update(ranks)

    # ------------------------------------------------------------------ the set

    @property
    def small(self) -> set[int]:
        """The ranks in the plain set: a hot loop may test `rank in s.small` (C speed) before `s.add(rank)`."""
        return self._small

    def __contains__(self, rank: object) -> bool:
        if rank in self._small:
            return True
        if not self._bits or not isinstance(rank, int) or not 0 <= rank < len(self._bits) * 8:
            return False
        return bool(self._bits[rank >> 3] >> (rank & 7) & 1)

    def __len__(self) -> int:
        return len(self._small) + self._bit_count

    def __iter__(self) -> Iterator[int]:
        for item in self._runs_source():
            if isinstance(item, tuple):
                yield from range(item[0], item[1] + 1)
            else:
                yield item

    def add(self, rank: int) -> None:
        self._writable()
        if self._bits and 0 <= rank < MAX_BIT_RANK:
            self._set_bit(rank)
            return
        self._small.add(rank)
        if len(self._small) > SMALL and not self._bits:
            self._spill()

    def discard(self, rank: int) -> None:
        self._writable()
        if rank in self._small:
            self._small.discard(rank)
        elif rank in self:
            self._bits[rank >> 3] &= ~(1 << (rank & 7)) & 0xFF
            self._bit_count -= 1

    def update(self, ranks: Iterable[int]) -> None:
        if isinstance(ranks, RankSet):
            self |= ranks
            return
        for rank in ranks:
            self.add(rank)

    def __ior__(self, other: Any) -> RankSet:
        if not isinstance(other, RankSet):
            for rank in other:
                self.add(rank)
            return self
        self._writable()
        self._or_int(int.from_bytes(other._bits, "little"))
        for rank in other._small:
            self.add(rank)
        return self

    def add_range(self, start: int, stop: int) -> None:
        """Add start..stop-1 (a world of a million ranks in one step, not a million)."""
        self._writable()
        if stop - start <= SMALL or start < 0 or stop > MAX_BIT_RANK:
            for rank in range(start, stop):
                self.add(rank)
            return
        self._or_int(((1 << (stop - start)) - 1) << start)

    def __sub__(self, other: Any) -> RankSet:
        if not isinstance(other, RankSet):
            return super().__sub__(other)  # type: ignore[return-value]
        out = RankSet(r for r in self._small if r not in other)
        if self._bits:
            out._or_int(int.from_bytes(self._bits, "little") & ~int.from_bytes(other._bits, "little"))
            for rank in other._small:
                if rank in out:
                    out.discard(rank)
        return out

    def __and__(self, other: Any) -> RankSet:
        if not isinstance(other, RankSet):
            return super().__and__(other)  # type: ignore[return-value]
        out = RankSet(r for r in self._small if r in other)
        out.update(r for r in other._small if r in self)
        if self._bits and other._bits:
            out._or_int(int.from_bytes(self._bits, "little") & int.from_bytes(other._bits, "little"))
        return out

    def __or__(self, other: Any) -> RankSet:
        out = RankSet(self)
        out |= other
        return out

    __ror__ = __or__

    def copy(self) -> RankSet:
        return RankSet(self)

    @classmethod
    def _from_iterable(cls, ranks: Iterable[Any]) -> Any:  # what the Set mixins build their results with
        return cls(ranks)

    # ------------------------------------------------------------------ reading it

    def first(self) -> int | None:
        """The lowest rank, or None when empty."""
        low = min(self._small, default=None)
        if (low is not None and low < 0) or not self._bit_count:
            return low
        index = next(i for i, value in enumerate(self._bits) if value)
        return (index << 3) + _BITS_OF[self._bits[index]][0]

    def last(self) -> int | None:
        """The highest rank, or None when empty."""
        high = max(self._small, default=None)
        if (high is not None and high >= len(self._bits) * 8) or not self._bit_count:
            return high
        index = len(self._bits.rstrip(b"\0")) - 1
        return (index << 3) + _BITS_OF[self._bits[index]][-1]

    def ranges(self) -> list[tuple[int, int]]:
        """Runs of consecutive ranks as (first, last), ascending."""
        out: list[tuple[int, int]] = []
        start = end = None
        for rank in self._runs_source():
            if isinstance(rank, tuple):  # a whole byte of ranks: rank[0]..rank[1]
                first, last = rank
            else:
                first = last = rank
            if end is not None and first == end + 1:
                end = last
                continue
            if start is not None and end is not None:
                out.append((start, end))
            start, end = first, last
        if start is not None and end is not None:
            out.append((start, end))
        return out

    def text(self) -> str:
        """The ranks as people write them: `0-2,4-7` (empty string when there are none)."""
        return ",".join(str(a) if a == b else f"{a}-{b}" for a, b in self.ranges())

    def freeze(self) -> RankSet:
        """Make this set read-only (for a result record) and return it."""
        self._frozen = True
        return self

    def __hash__(self) -> int:
        if not self._frozen:
            raise TypeError("unhashable: a RankSet that is not frozen")
        return hash((len(self), self.text()))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, RankSet):
            return super().__eq__(other)
        if len(self) != len(other):
            return False
        if bool(self._bits) == bool(other._bits):  # the same layout: compare the parts
            return self._small == other._small and self._bits.rstrip(b"\0") == other._bits.rstrip(b"\0")
        return all(rank in other for rank in self)

    def __le__(self, other: Any) -> bool:
        if not isinstance(other, RankSet):
            return super().__le__(other)
        if len(self) > len(other) or not all(rank in other for rank in self._small):
            return False
        mine = int.from_bytes(self._bits, "little")
        return mine & ~int.from_bytes(other._bits, "little") == 0

    def __ge__(self, other: Any) -> bool:
        if not isinstance(other, RankSet):
            return super().__ge__(other)
        return other <= self

    def __repr__(self) -> str:
        return f"RankSet({self.text()!r})"

    # ------------------------------------------------------------------ inside

    def _writable(self) -> None:
        if self._frozen:
            raise TypeError("this RankSet is frozen (part of a result)")

    def _set_bit(self, rank: int) -> None:
        index = rank >> 3
        if index >= len(self._bits):
            self._bits.extend(bytes(max(index + 1 - len(self._bits), len(self._bits))))
        mask = 1 << (rank & 7)
        value = self._bits[index]
        if not value & mask:
            self._bits[index] = value | mask
            self._bit_count += 1

    def _spill(self) -> None:
        """Start the bitmap and move into it the ranks it can hold (once the plain set outgrew SMALL). The
        bitmap is never empty after this, so a set of out-of-range ranks does not spill again."""
        held = [r for r in self._small if 0 <= r < MAX_BIT_RANK]
        self._bits = bytearray(max(held, default=0) // 8 + 1)
        for rank in held:
            self._set_bit(rank)
        self._small.difference_update(held)

    def _or_int(self, value: int) -> None:
        """OR the bitmap `value` (an int, bit n = rank n) into this set (starting the bitmap if needed)."""
        if not value:
            return
        if not self._bits:
            self._spill()
        merged = int.from_bytes(self._bits, "little") | value
        self._bits = bytearray(merged.to_bytes(max(len(self._bits), (value.bit_length() + 7) // 8), "little"))
        self._bit_count = merged.bit_count()

    def _runs_source(self) -> Iterator[int | tuple[int, int]]:
        """The ranks ascending, a full byte of the bitmap as one (first, last) pair (a million ranks in a
        run cost 125,000 steps, not a million)."""
        if not self._bits:
            yield from sorted(self._small)
            return
        outside = sorted(self._small)
        low = [r for r in outside if r < 0]
        yield from low
        for index, value in enumerate(self._bits):
            if value == 0xFF:
                yield (index << 3, (index << 3) + 7)
            elif value:
                base = index << 3
                for bit in _BITS_OF[value]:
                    yield base + bit
        yield from outside[len(low):]


class RankHosts(Mapping[int, str]):
    """rank -> the host its lines' prefixes named first, in about 4 bytes a rank: host numbers in an array
    indexed by rank (ranks below MAX_DENSE_RANK; the others in a dict of at most MAX_SPARSE ranks) and
    each distinct host once (at most MAX_HOSTS of them; a rank first seen on a host past that is not
    recorded). A Ray job of a million workers, each printing its own `ip=` prefix, costs a few MiB."""

    MAX_DENSE_RANK = 1 << 22  # the array: 16 MiB at most
    MAX_SPARSE = 1 << 16
    MAX_HOSTS = 1 << 16

    def __init__(self) -> None:
        self._dense = array("i")  # host number + 1 by rank; 0: none
        self._sparse: dict[int, int] = {}
        self._names: list[str] = []
        self._number: dict[str, int] = {}
        self._count = 0

    def add(self, rank: int, host: str) -> None:
        """Record `host` for `rank` unless the rank already has one."""
        if rank in self:
            return
        number = self._number.get(host)
        if number is None:
            if len(self._names) >= self.MAX_HOSTS:
                return
            number = self._number[host] = len(self._names)
            self._names.append(host)
        if 0 <= rank < self.MAX_DENSE_RANK:
            if rank >= len(self._dense):
                self._dense.extend(array("i", bytes(4 * max(rank + 1 - len(self._dense), len(self._dense)))))
            self._dense[rank] = number + 1
        elif len(self._sparse) < self.MAX_SPARSE:
            self._sparse[rank] = number
        else:
            return
        self._count += 1

    def __getitem__(self, rank: int) -> str:
        if isinstance(rank, int) and 0 <= rank < len(self._dense):
            number = self._dense[rank]
            if number:
                return self._names[number - 1]
            raise KeyError(rank)
        return self._names[self._sparse[rank]]

    def __contains__(self, rank: object) -> bool:
        if isinstance(rank, int) and 0 <= rank < len(self._dense):
            return self._dense[rank] != 0
        return rank in self._sparse

    def __iter__(self) -> Iterator[int]:
        sparse = sorted(self._sparse)
        yield from (rank for rank in sparse if rank < 0)
        for rank, number in enumerate(self._dense):
            if number:
                yield rank
        yield from (rank for rank in sparse if rank >= 0)

    def __len__(self) -> int:
        return self._count

    def hosts(self) -> list[str]:
        """The distinct hosts, in the order first seen."""
        return list(self._names)

    def ranks_where(self, test: Callable[[str], bool]) -> list[int]:
        """The ranks whose host passes `test`, ascending (`test` is asked once per distinct host)."""
        wanted = {number for number, name in enumerate(self._names) if test(name)}
        if not wanted:
            return []
        dense = {number + 1 for number in wanted}
        out = [rank for rank, number in enumerate(self._dense) if number in dense]
        out += [rank for rank, number in self._sparse.items() if number in wanted]
        return sorted(out)
