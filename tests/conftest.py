"""Shared test helpers: paths of the repository's fixtures."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE_LOGS = REPO / "tests" / "fixtures" / "logs"
EXAMPLES = REPO / "examples"
