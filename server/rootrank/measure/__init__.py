"""`rootrank measure`: what activation checkpointing really does for a model, measured by running it.

The engine side of the measurement. `measure()` starts the probe (`probe.py`, the only torch code of
rootrank) in the user's interpreter, reads its facts and turns them into a `Measurement`: activation
memory and recompute per block, the configurations compared (none, as configured, all blocks, the
plan), the plan's code and the findings, with the failure library's ids.
"""

from __future__ import annotations

from collections.abc import Callable

from rootrank.measure.analysis import analyze, parse_bytes, parse_probe
from rootrank.measure.records import MeasureError, Measurement
from rootrank.measure.run import MeasureRequest, ProgressCallback, find_interpreter, run_probe
from rootrank.model import Severity

__all__ = ["MeasureError", "MeasureRequest", "Measurement", "find_interpreter", "measure", "parse_bytes"]


def _severities() -> dict[str, Severity]:
    from rootrank.library import load_library

    return {entry.id: entry.severity for entry in load_library().entries.values()}


def measure(request: MeasureRequest, python: str | None = None, budget: int | None = None,
            on_progress: ProgressCallback | None = None, cancelled: Callable[[], bool] | None = None,
            ) -> Measurement:
    """Measure `request` in `python` (default: find_interpreter); raises MeasureError."""
    interpreter = python or find_interpreter(None, request.cwd)
    data = run_probe(request, interpreter, on_progress=on_progress, cancelled=cancelled)
    return analyze(parse_probe(data), request.subject(), budget=budget, severities=_severities())
