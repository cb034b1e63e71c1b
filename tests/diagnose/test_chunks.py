"""Reading in whole-line chunks (read.LineChunks) and selecting lines from them (select.py): whatever the
chunk size, the limit, or how a stream hands out its bytes, the lines and their numbers are the same."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank.diagnose import select as select_mod
from rootrank.diagnose.prefilter import Prefilter
from rootrank.diagnose.read import LineChunks


class Trickle(io.RawIOBase):
    """A stream that hands out at most `step` bytes per read, like a pipe."""

    def __init__(self, data: bytes, step: int) -> None:
        self._data = memoryview(data)
        self._step = step

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: memoryview) -> int:  # type: ignore[override]
        n = min(len(buffer), self._step, len(self._data))
        buffer[:n] = self._data[:n]
        self._data = self._data[n:]
        return n


def _pieces(stream: io.RawIOBase | io.BytesIO, chunk: int, max_line: int, limit: int | None = None) -> list[bytes]:
    return [bytes(buf[:cut]) for buf, cut in LineChunks(stream, chunk, max_line, limit)]


def test_pieces_end_at_line_ends_and_join_to_the_input() -> None:
    data = b"one\ntwo\nthree\nfour"
    pieces = _pieces(io.BytesIO(data), 6, 1 << 20)
    assert b"".join(pieces) == data
    assert all(p.endswith(b"\n") for p in pieces[:-1])
    assert pieces[-1] == b"four"  # the last line, without its newline


def test_a_line_longer_than_the_limit_is_cut_there() -> None:
    data = b"x" * 50 + b"\nshort\n"
    pieces = _pieces(io.BytesIO(data), 8, 20)
    assert b"".join(pieces) == data
    assert max(len(p) for p in pieces) <= 20 + 8


def test_limit_and_extend() -> None:
    data = b"".join(b"line %d\n" % i for i in range(100))
    stops = [data.index(b"line 40\n"), data.index(b"line 70\n")]
    chunks = LineChunks(io.BytesIO(data), 32, 1 << 20, limit=data.index(b"line 10\n"))
    chunks.extend = lambda: stops.pop(0) if stops else None
    joined = b"".join(bytes(buf[:cut]) for buf, cut in chunks)
    assert joined == data[: data.index(b"line 70\n")]
    assert chunks.read == len(joined)


@settings(max_examples=60, deadline=None)
@given(lines=st.lists(st.binary(max_size=40).map(lambda b: b.replace(b"\n", b"")), max_size=60),
       final_newline=st.booleans(), chunk=st.integers(1, 64), step=st.integers(1, 50))
def test_any_chunking_gives_the_same_bytes(lines: list[bytes], final_newline: bool, chunk: int, step: int) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    assert b"".join(_pieces(Trickle(data, step), chunk, 1 << 20)) == data


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.sampled_from([b"[rank1]: step 3 loss 2.1", b"[rank0]: Traceback (most recent call last):",
                                       b'[rank0]:   File "train.py", line 3, in <module>',
                                       b"[rank0]: ValueError: bad", b"", b"x" * 30]), max_size=400),
       chunk=st.integers(16, 512))
def test_selection_does_not_depend_on_the_chunk_size(lines: list[bytes], chunk: int) -> None:
    data = b"\n".join(lines) + b"\n"
    prefilter = Prefilter(["Traceback (most recent call last)", "ValueError"], [], data)

    def select(size: int) -> tuple[list[tuple[int, str]], int]:
        original = select_mod.CHUNK_BYTES
        select_mod.CHUNK_BYTES = size
        try:
            generator = select_mod.select_lines(io.BytesIO(data), lambda sample: prefilter, lambda: False,
                                                lambda buf, start, end: None)
            selected: list[tuple[int, str]] = []
            while True:
                try:
                    selected.append(next(generator))
                except StopIteration as stop:
                    return selected, stop.value
        finally:
            select_mod.CHUNK_BYTES = original

    assert select(chunk) == select(1 << 20)


@pytest.mark.parametrize("step", [1, 7, 4096])
def test_trickling_stdin_like_streams_are_read_whole(step: int) -> None:
    data = b"".join(b"[rank%d]: hello %d\n" % (i % 4, i) for i in range(500))
    assert b"".join(_pieces(Trickle(data, step), 1000, 1 << 20)) == data


def test_a_stream_longer_than_its_size_hint_is_read_to_the_end() -> None:
    # A log still being written: it holds more than it did when its size was taken.
    data = b"".join(b"line %d\n" % i for i in range(50000))
    chunks = LineChunks(io.BytesIO(data), 1 << 20, 1 << 20, size_hint=100)
    assert b"".join(bytes(buf[:cut]) for buf, cut in chunks) == data


def test_remaining_bytes(tmp_path: Path) -> None:
    from rootrank.diagnose.read import remaining_bytes

    path = tmp_path / "x.log"
    path.write_bytes(b"0123456789")
    with open(path, "rb") as handle:
        handle.read(4)
        assert remaining_bytes(handle) == 6
    stream = io.BytesIO(b"abc")
    assert remaining_bytes(stream) == 3
    stream.write(b"more")  # still writable: the buffer view was released
    assert remaining_bytes(Trickle(b"abc", 1)) is None


def test_text_memo_is_bounded_and_skips_long_texts() -> None:
    from rootrank.diagnose.memo import TextMemo

    calls: list[str] = []
    memo = TextMemo(lambda text: calls.append(text) or len(text), size=3, max_chars=10)
    assert [memo("a"), memo("a"), memo("bb")] == [1, 1, 2]
    assert calls == ["a", "bb"]  # the repeat was remembered
    memo("c")
    memo("d")  # full: forgotten, then remembered again
    memo("a")
    assert calls == ["a", "bb", "c", "d", "a"]
    memo("x" * 11)
    memo("x" * 11)
    assert calls[-2:] == ["x" * 11, "x" * 11]  # too long to remember


@settings(max_examples=40, deadline=None)
@given(lines=st.lists(st.binary(min_size=0, max_size=30).map(lambda b: b.replace(b"\n", b"")), min_size=1,
                      max_size=80),
       chunk=st.integers(8, 90))
def test_the_census_tail_of_a_stream_is_the_tail_of_the_file(lines: list[bytes], chunk: int,
                                                             tmp_path_factory: pytest.TempPathFactory) -> None:
    # One process keeps the end of what it read; two processes read the end of the file: same bytes.
    data = b"\n".join(lines) + b"\n"
    path = tmp_path_factory.mktemp("tail") / "log"
    path.write_bytes(data)
    original = select_mod.CENSUS_BYTES
    select_mod.CENSUS_BYTES = 64
    try:
        tail = select_mod._Tail()
        for buf, cut in LineChunks(io.BytesIO(data), chunk, 1 << 20):
            tail.keep(buf, cut)
        swept: list[bytes] = []
        tail.sweep(lambda buf, start, end: swept.append(bytes(buf[start:end])))
        with open(path, "rb") as handle:
            expected = select_mod._tail_of(handle.fileno(), len(data))
    finally:
        select_mod.CENSUS_BYTES = original
    assert b"".join(swept) == expected
