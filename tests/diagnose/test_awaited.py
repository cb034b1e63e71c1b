"""Completion markers (`after:` in an entry's pattern): a line as common as a training step's loss dict
counts only as the first one after a save started, so the line selection looks for it only then, by
its literal, in the chunk and in the second process's part of the file alike."""

from __future__ import annotations

import io
import random
from pathlib import Path

import pytest

from rootrank.diagnose import Pipeline, diagnose_paths, prefilter_literals
from rootrank.diagnose.select import _awaited_in_file, select_lines
from rootrank.library import load_library

STEP = "[rank0]: {'loss': '4.70', 'grad_norm': '0.81', 'learning_rate': '3.75e-05', 'epoch': '%d'}"
CHATTER = "[rank%d]: data.py:88] prefetched batch %d"
SAVE = "[rank0]: [INFO|trainer.py:2936] Saving model checkpoint to out/checkpoint-%d"
KILLED = ("[rank0]: E1202 03:56:25.107000 24731 torch/distributed/elastic/multiprocessing/api.py:1002] failed "
          "(exitcode: -9) local_rank: 0 (pid: 24857) of binary: /home/user/venv/bin/python3")


def _log(save_at: int, steps_after_save: int) -> str:
    lines: list[str] = []
    for i in range(save_at + 1):
        lines += [CHATTER % (r, i) for r in range(4)] + [STEP % i]
    lines.append(SAVE % save_at)
    lines += [CHATTER % (1, j) for j in range(50)]
    lines += [STEP % j for j in range(steps_after_save)]
    return "\n".join([*lines, KILLED]) + "\n"


def test_completion_markers_are_not_prefilter_literals() -> None:
    exact, folded = prefilter_literals(load_library())
    assert "{'loss': " not in exact + folded
    assert "Saving model checkpoint to" in exact


def test_a_loss_line_is_selected_only_after_a_save_started() -> None:
    text = _log(save_at=300, steps_after_save=3)
    pipeline = Pipeline()
    selected = select_lines(io.BytesIO(text.encode()), pipeline.prefilter, lambda: pipeline.scanner.wants_every_line,
                            lambda *_: None, chunk_bytes=4096, awaited=pipeline.awaited)
    picked = pipeline_feed(pipeline, selected)
    lines = text.splitlines()
    save = lines.index(SAVE % 300) + 1
    first_after = next(n for n, line in enumerate(lines, 1) if n > save and "{'loss': " in line)
    # Past the look-ahead that learns the prefix dialect (every line of a source's first few hundred),
    # the one loss line selected is the first after the save; the steps before it are skipped.
    late = [n for n, line in picked if n > 500 and "{'loss': " in line]
    assert late == [first_after]
    assert sum("{'loss': " in line for line in lines[500:]) > 200
    assert len([n for n, _ in picked if n > 500]) < 10
    assert "may be partial" not in (pipeline.result().root_cause or _no_cause()).fix


def pipeline_feed(pipeline: Pipeline, selected: object) -> list[tuple[int, str]]:
    """Feed the selection to the pipeline (which arms and disarms the marker) and keep what it saw."""
    seen: list[tuple[int, str]] = []

    def tap() -> object:
        for item in selected:  # type: ignore[attr-defined]
            seen.append(item)
            yield item

    pipeline.feed("-", tap())  # type: ignore[arg-type]
    return seen


def _no_cause() -> object:
    raise AssertionError("no root cause")


@pytest.mark.parametrize("steps_after_save", [0, 2])
def test_the_resume_note_does_not_depend_on_the_prefilter(steps_after_save: int, tmp_path: Path,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    log = tmp_path / "run.log"
    log.write_text(_log(save_at=1990, steps_after_save=steps_after_save))
    found = {}
    for engine in ("off", "python"):
        monkeypatch.setenv("ROOTRANK_ENGINE", engine)
        d = diagnose_paths([str(log)])
        assert d.root_cause is not None
        found[engine] = d
    assert found["off"].root_cause.fix == found["python"].root_cause.fix  # type: ignore[union-attr]
    assert found["off"].findings == found["python"].findings
    assert ("may be partial" in found["off"].root_cause.fix) is (steps_after_save == 0)  # type: ignore[union-attr]


def _naive(data: bytes, start: int, stop: int, literals: tuple[bytes, ...]) -> tuple[int, int] | None:
    hits = [h for h in (data.find(lit, start, stop) for lit in literals) if h >= 0]
    if not hits:
        return None
    line_start = data.rfind(b"\n", start, min(hits)) + 1 or start
    line_start = max(line_start, start)
    return line_start, data.count(b"\n", start, line_start)


@pytest.mark.parametrize("seed", range(6))
def test_the_file_search_finds_the_first_line_holding_a_literal(seed: int, tmp_path: Path) -> None:
    rng = random.Random(seed)
    words = [b"step", b"loss", b"x" * 300, b"{'loss': ", b"saved", b"\n", b"\n", b"\n"]
    data = b"".join(rng.choice(words) for _ in range(1000)) + b"\n"
    path = tmp_path / "part.log"
    path.write_bytes(data)
    starts = [0] + [i + 1 for i in range(len(data)) if data[i] == 10]
    literals = (b"{'loss': ", b"saved")
    with open(path, "rb") as handle:
        for start in rng.sample(starts[:-1], 10):
            stop = rng.randrange(start, len(data) + 1)
            for block in (5, 16, 64, 1 << 20):
                assert _awaited_in_file(handle.fileno(), start, stop, literals, block) == \
                    _naive(data, start, stop, literals), (start, stop, block)
