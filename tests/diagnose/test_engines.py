"""Every engine and every mode gives the same diagnosis: the pure-Python prefilter, Hyperscan when it is
installed, one process or two. Only the speed may differ."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from rootrank.diagnose import Pipeline, diagnose_paths
from rootrank.diagnose import parallel as parallel_mod
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


def test_two_processes_match_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A log past the head window with the failure near the end; the split point falls in the middle.
    filler = b"".join(b"[rank%d]: step %d | loss 0.%d\n" % (r, s, s % 97) for s in range(6000) for r in range(4))
    tail = (FIXTURE_LOGS / "process.uncaught-exception--rank2-valueerror-step3-no-record" / "log.txt").read_bytes()
    big = tmp_path / "big.log"
    big.write_bytes(filler * 3 + tail)
    monkeypatch.setattr(parallel_mod, "MIN_PARALLEL_BYTES", 1 << 20)
    monkeypatch.setenv("ROOTRANK_JOBS", "1")
    single = diagnosis_to_json(diagnose_paths([str(big)]))
    monkeypatch.delenv("ROOTRANK_JOBS")
    split = diagnosis_to_json(diagnose_paths([str(big)]))
    assert split == single
    assert single["root_cause"]["rank"] == 2
