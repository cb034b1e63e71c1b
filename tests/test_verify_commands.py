"""Verify commands must be able to verify: what they measure is measured where it happens.

CUDA memory statistics (`max_memory_allocated`, `reset_peak_memory_stats`, `memory_allocated`) are
per process: a `python -c` that reads or resets them without running the training itself measures
an empty process.
"""

from __future__ import annotations

import re

import pytest

from rootrank.library import load_library

LIBRARY = load_library()
_INLINE = re.compile(r'python3? -c "(?P<code>(?:[^"\\]|\\.)*)"')
_PER_PROCESS = ("max_memory_allocated", "reset_peak_memory_stats", "memory_allocated(", "memory_reserved")
_RUNS_TRAINING = ("runpy.run_path", "runpy.run_module", "exec(", "import train", "from train import")


@pytest.mark.parametrize("entry", list(LIBRARY), ids=lambda e: e.id)
def test_memory_statistics_are_read_in_the_training_process(entry: object) -> None:
    command = entry.verify_command  # type: ignore[attr-defined]
    for m in _INLINE.finditer(command):
        code = m["code"]
        if any(s in code for s in _PER_PROCESS):
            assert any(s in code for s in _RUNS_TRAINING), (
                f"{entry.id}: `python -c` reads CUDA memory statistics of a process that trains nothing: {code}")  # type: ignore[attr-defined]
