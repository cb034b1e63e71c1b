"""A long job that logs a caught exception every step (a retried upload) keeps a bounded number of
traceback units per (entry, rank), however many steps it runs: memory of a day-long `rootrank watch` does
not grow with the job. Counts still count every one, and a failure that comes after them is still kept.

Lines are real message texts (Python's ConnectionResetError, torch's CUDA OOM from the fixtures) in the
shape under test."""

from __future__ import annotations

import io
from collections import Counter

import pytest

from rootrank.diagnose import Pipeline, collect
from rootrank.diagnose.live import LiveDiagnosis
from rootrank.render.json import diagnosis_to_json

OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.91 GiB. GPU 1 has a total capacity of "
       "79.15 GiB of which 2.12 GiB is free. Including non-PyTorch memory, this process has 77.02 GiB memory in use.")


def _caught(rank: int, step: int) -> list[str]:
    return [f"[rank{rank}]: step {step} loss 0.5", f"[rank{rank}]: Traceback (most recent call last):",
            f'[rank{rank}]:   File "/workspace/upload.py", line 12, in push', f"[rank{rank}]:     conn.send(batch)",
            f"[rank{rank}]: ConnectionResetError: [Errno 104] Connection reset by peer",
            f"[rank{rank}]: retrying upload in 1 s"]


def _log(steps: int) -> bytes:
    lines = [line for step in range(steps) for rank in (0, 1) for line in _caught(rank, step)]
    lines += ["[rank1]: Traceback (most recent call last):", '[rank1]:   File "/workspace/train.py", line 40, in <module>',
              "[rank1]:     loss.backward()", f"[rank1]: {OOM}"]
    return ("\n".join(lines) + "\n").encode()


def _collected(data: bytes) -> Pipeline:
    pipeline = Pipeline()
    pipeline.feed_stream("-", io.BytesIO(data))
    return pipeline


def test_traceback_units_are_capped_per_entry_and_rank_and_counted_whole(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "MAX_PARKED_BLOCKS", 50)
    steps = 400
    pipeline = _collected(_log(steps))
    collector = pipeline.collector
    units = Counter((u.rule, u.line.rank) for u in collector.out.units)
    cap = collect.KEEP_BLOCKS_PER_RANK_AND_RULE
    assert units[("process.uncaught-exception", 0)] == units[("process.uncaught-exception", 1)] == cap
    # The OOM's traceback came after rank 1's cap was reached: its last line names it by another entry.
    assert units[("memory.cuda-oom", 1)] == 1
    assert collector.out.counts["process.uncaught-exception"].count >= 2 * steps
    # Followed blocks: the kept ones and the latest parked, not one per traceback.
    assert len(collector._blocks) <= 2 * cap + 1 + 50 + 1
    d = pipeline.result()
    assert d.root_cause is not None and (d.root_cause.rule, d.root_cause.rank) == ("process.uncaught-exception", 0)


def test_the_collected_state_does_not_grow_with_the_jobs_length(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(collect, "MAX_PARKED_BLOCKS", 50)
    sizes = []
    for steps in (300, 1200):
        collector = _collected(_log(steps)).collector
        sizes.append((len(collector.out.units), len(collector._blocks), len(collector._block_op),
                      len(collector.ignored_blocks)))
        assert len(collector._parked) <= 50
    # Four times the steps: the same units and the same followed blocks.
    assert sizes[0] == sizes[1], sizes


def test_the_rank_adoption_follows_only_recent_blocks(monkeypatch: pytest.MonkeyPatch) -> None:
    from rootrank.diagnose import lines

    # Unprefixed tracebacks, as `logger.exception` prints them after a rank-tagged record.
    text = "".join(f"[rank1] upload failed at step {step}\nTraceback (most recent call last):\n"
                   f'  File "/workspace/upload.py", line 12, in push\n    conn.send(batch)\n'
                   f"ConnectionResetError: [Errno 104] Connection reset by peer\n" for step in range(500))

    def adopted() -> tuple[Counter[tuple[str, int | None]], int]:
        pipeline = _collected(text.encode())
        seen = len(pipeline.scanner.adoption._seen_blocks)
        return Counter((u.rule, u.line.rank) for u in pipeline.collector.out.units), seen

    whole, seen_whole = adopted()
    assert whole[("process.uncaught-exception", 1)] == collect.KEEP_BLOCKS_PER_RANK_AND_RULE
    assert seen_whole == 500
    monkeypatch.setattr(lines, "RECENT_BLOCKS", 40)
    recent, seen_recent = adopted()
    assert seen_recent <= 80
    assert recent == whole  # the same ranks adopted, following only the latest blocks


def test_fed_live_it_is_the_batch_diagnosis() -> None:
    data = _log(300)
    batch = _collected(data).result()
    live = LiveDiagnosis(interval=0.0)
    live.start_source("-")
    for start in range(0, len(data), 4093):
        live.write(data[start:start + 4093])
    final = live.close(timeout=120)
    assert final is not None and live.error is None
    assert diagnosis_to_json(final) == diagnosis_to_json(batch)
