"""Every engine and every mode gives the same diagnosis: the pure-Python prefilter, Hyperscan when it is
installed, one process or two. Only the speed may differ."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rootrank.diagnose import Pipeline, diagnose_paths
from rootrank.diagnose import parallel as parallel_mod
from rootrank.diagnose import select as select_mod
from rootrank.render.json import diagnosis_to_json
from tests.conftest import FIXTURE_LOGS

LOGS = sorted(FIXTURE_LOGS.glob("*/log.txt"))


def _run(data: bytes, engine: str, monkeypatch: pytest.MonkeyPatch) -> dict:
    monkeypatch.setenv("ROOTRANK_ENGINE", engine)
    pipeline = Pipeline()
    pipeline.feed_stream("log.txt", io.BytesIO(data))
    return diagnosis_to_json(pipeline.result())


@pytest.mark.parametrize("log", LOGS, ids=lambda p: p.parent.name)
def test_hyperscan_matches_python(log: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("hyperscan")
    data = log.read_bytes() * 1
    assert _run(data, "hyperscan", monkeypatch) == _run(data, "python", monkeypatch)


def _small_parts(monkeypatch: pytest.MonkeyPatch) -> None:
    # Small chunks, segments and windows, so that a log of a few MiB crosses every boundary the big ones do.
    monkeypatch.setattr(parallel_mod, "MIN_PARALLEL_BYTES", 1 << 20)
    monkeypatch.setattr(parallel_mod, "READ_BYTES", 64 << 10)
    monkeypatch.setattr(parallel_mod, "SEGMENT_BYTES", 96 << 10)
    monkeypatch.setattr(parallel_mod, "RECORDS_PER_READ", 7)
    monkeypatch.setattr(select_mod, "CHUNK_BYTES", 128 << 10)
    monkeypatch.setattr(select_mod._LineReader, "MIN_WINDOW", 256)
    monkeypatch.setattr(select_mod._LineReader, "WINDOW", 4 << 10)


def _split_vs_single(path: Path, monkeypatch: pytest.MonkeyPatch, worker_only: bool = False,
                     ) -> tuple[dict, dict, list[int]]:
    """The diagnosis with a second process and without; and where the worker's part began."""
    _small_parts(monkeypatch)
    monkeypatch.setenv("ROOTRANK_JOBS", "1")
    single = diagnosis_to_json(diagnose_paths([str(path)]))
    monkeypatch.delenv("ROOTRANK_JOBS")
    if worker_only:
        # This process keeps its first segment only: the worker takes every other one.
        monkeypatch.setattr(parallel_mod.SharedClaims, "claim_front", lambda self: None)
    boundaries: list[int] = []
    real_summary = parallel_mod.SplitScan.summary

    def summary(self: parallel_mod.SplitScan) -> parallel_mod.PartSummary:
        found = real_summary(self)
        boundaries.append(self.boundary)
        return found

    monkeypatch.setattr(parallel_mod.SplitScan, "summary", summary)
    split = diagnosis_to_json(diagnose_paths([str(path)]))
    assert boundaries, "the second process was not used"
    return split, single, boundaries


FILLER = b"".join(b"[rank%d]: step %d | loss 0.%d\n" % (r, s, s % 97) for s in range(6000) for r in range(4))
TAIL = (FIXTURE_LOGS / "process.uncaught-exception--rank2-valueerror-step3-no-record" / "log.txt").read_bytes()


def test_two_processes_match_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A log past the head window with the failure near the end, in the second process's part.
    big = tmp_path / "big.log"
    big.write_bytes(FILLER * 3 + TAIL)
    split, single, _ = _split_vs_single(big, monkeypatch)
    assert split == single
    assert single["root_cause"]["rank"] == 2
    assert single["lines_read"] == (FILLER * 3 + TAIL).count(b"\n")


def test_split_inside_a_traceback(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The boundary falls in the middle of the failing rank's traceback: the lines after it are read
    # by this process from the other's part, in order, as if there had been no split.
    prefix = FILLER * 2
    inside = TAIL.index(b"[rank2]:   File", TAIL.index(b"[rank2]: Traceback")) + 1
    # size / 2 == len(prefix) + inside  ->  suffix length
    suffix = (FILLER * 3)[: len(prefix) + 2 * inside - len(TAIL)]
    suffix = suffix[: suffix.rfind(b"\n") + 1]
    data = prefix + TAIL + suffix
    big = tmp_path / "big.log"
    big.write_bytes(data)
    monkeypatch.setattr(parallel_mod, "_segment_starts",
                        lambda path, size, already_read: [
                            0, parallel_mod._line_start_at_or_after(path, len(prefix) + inside), size])
    split, single, boundaries = _split_vs_single(big, monkeypatch, worker_only=True)
    traceback_start = len(prefix) + TAIL.index(b"[rank2]: Traceback")
    traceback_end = len(prefix) + TAIL.index(b"[rank2]: ValueError")
    assert traceback_start < boundaries[0] <= traceback_end, (traceback_start, boundaries, traceback_end)
    assert split == single
    assert single["root_cause"]["rank"] == 2
    assert single["root_cause"]["rule"] == "process.uncaught-exception"


def test_split_file_without_final_newline_and_long_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # Lines longer than the reading window in the second part, one of them a candidate, and no
    # newline at the very end: line numbers and texts agree with one process.
    long_candidate = b"[rank1]: Traceback (most recent call last) " + b"x" * 20000 + b"\n"
    long_plain = b"[rank3]: " + b"y" * 30000 + b"\n"
    data = FILLER * 3 + long_plain + long_candidate + TAIL + long_plain + b"[rank0]: the end, no newline"
    big = tmp_path / "big.log"
    big.write_bytes(data)
    split, single, _ = _split_vs_single(big, monkeypatch)
    assert split == single
    assert single["lines_read"] == data.count(b"\n") + 1


def test_split_when_every_line_is_a_candidate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A warning on every line: the second process's records go through a file, not memory.
    warning = b"[rank%d]: UserWarning: torch.utils.checkpoint: the use_reentrant parameter should be passed explicitly.\n"
    data = b"".join(warning % (i % 8) for i in range(40000)) + TAIL
    big = tmp_path / "big.log"
    big.write_bytes(data)
    split, single, _ = _split_vs_single(big, monkeypatch)
    assert split == single


@pytest.mark.parametrize("who", ["worker takes all but the first segment", "this process takes everything"])
def test_split_whoever_takes_the_segments(who: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    big = tmp_path / "big.log"
    big.write_bytes(FILLER * 3 + TAIL + FILLER)
    if who.startswith("this"):
        monkeypatch.setattr(parallel_mod.SharedClaims, "claim_back", lambda self: None)
    split, single, boundaries = _split_vs_single(big, monkeypatch, worker_only=who.startswith("worker"))
    assert split == single
    size = big.stat().st_size
    assert (boundaries[0] == size) == who.startswith("this")


def _dying_worker(path: str, out_fd: int) -> None:
    raise MemoryError("the worker ran out of memory")


def test_a_failing_worker_costs_only_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          caplog: pytest.LogCaptureFixture) -> None:
    # The worker dies (killed for memory, say): this process reads the rest itself, same diagnosis.
    big = tmp_path / "big.log"
    big.write_bytes(FILLER * 3 + TAIL + FILLER)
    _small_parts(monkeypatch)
    monkeypatch.setenv("ROOTRANK_JOBS", "1")
    single = diagnosis_to_json(diagnose_paths([str(big)]))
    monkeypatch.delenv("ROOTRANK_JOBS")
    monkeypatch.setattr(parallel_mod, "_work", _dying_worker)
    assert diagnosis_to_json(diagnose_paths([str(big)])) == single
    assert "the second process failed (the worker ran out of memory)" in caplog.text
    assert single["root_cause"]["rank"] == 2
