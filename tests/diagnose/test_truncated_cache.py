"""The cut-line regexes kept on disk between runs (diagnose/truncated.py) never change a diagnosis.

Each case runs `rootrank diagnose` as a real process on corpus logs whose diagnosis needs the cut-line
patterns, with the cache off (the reference), cold (written), warm (read), corrupted or tampered with
(rejected and rewritten), and in a directory it cannot write: the JSON reports must be identical.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LOGS = [ROOT / "tests/fixtures/logs" / name / "log.txt" for name in (
    "process.killed-signal--pasted-failure-table-three-ranks-sigabrt-cut",
    "compile.backend-failed--pasted-traceback-cut-in-inductor-frames",
)]
# An OOM message pasted cut at a terminal's width: only a cut-line pattern names it (without one it is
# read as an uncaught exception), so a wrong cached regex would show in the report.
CUT_OOM = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 100.00 MiB (GPU 0; 12.00 GiB total\n"


def _diagnose(log: Path, cache_home: Path, **extra: str) -> dict:
    env = {key: value for key, value in os.environ.items() if key != "ROOTRANK_NO_CACHE"}
    env.update(PYTHONPATH=str(ROOT / "server"), XDG_CACHE_HOME=str(cache_home), **extra)
    done = subprocess.run([sys.executable, "-m", "rootrank", "diagnose", "--format", "json", str(log)],
                          env=env, capture_output=True, text=True, timeout=120)
    assert done.stdout, done.stderr
    return json.loads(done.stdout)


def _cache_files(cache_home: Path) -> list[Path]:
    return sorted((cache_home / "rootrank").glob("truncated-*.json"))


@pytest.mark.parametrize("log", [*LOGS, None], ids=lambda p: "cut-oom" if p is None else p.parent.name)
def test_cached_cut_patterns_give_the_same_diagnosis(log: Path | None, tmp_path: Path) -> None:
    if log is None:
        log = tmp_path / "pasted.log"
        log.write_text(CUT_OOM)
    reference = _diagnose(log, tmp_path / "off", ROOTRANK_NO_CACHE="1")
    assert reference["root_cause"] is not None, reference
    if log.name == "pasted.log":
        assert reference["root_cause"]["rule"] == "memory.cuda-oom"
    assert not _cache_files(tmp_path / "off")

    home = tmp_path / "home"
    assert _diagnose(log, home) == reference  # cold: derived and written
    files = _cache_files(home)
    assert len(files) == 1
    stored = json.loads(files[0].read_text())["sources"]
    assert any(row[2] for row in stored)
    assert _diagnose(log, home) == reference  # warm: read back

    files[0].write_text("{not json")
    assert _diagnose(log, home) == reference  # corrupted: rejected, derived again, rewritten
    assert json.loads(files[0].read_text())["sources"] == stored

    tampered = [[pattern, literal, None] for pattern, literal, _ in stored][:-1]
    files[0].write_text(json.dumps({"sources": tampered}))
    assert _diagnose(log, home) == reference  # rows that do not match the library: rejected
    assert json.loads(files[0].read_text())["sources"] == stored


def test_unwritable_cache_dir_falls_back(tmp_path: Path) -> None:
    log = LOGS[0]
    reference = _diagnose(log, tmp_path / "off", ROOTRANK_NO_CACHE="1")
    blocker = tmp_path / "file-not-dir"
    blocker.write_text("a file where the cache directory would be")
    assert _diagnose(log, blocker) == reference
    assert blocker.read_text() == "a file where the cache directory would be"
