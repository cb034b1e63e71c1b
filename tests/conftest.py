"""Shared test helpers: paths of the repository's fixtures."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE_LOGS = REPO / "tests" / "fixtures" / "logs"
EXAMPLES = REPO / "examples"

# tests/check/ holds `rootrank check` cases, read as text by tests/test_check_fixtures.py; a case named like
# a test module (`test_*.py`, to be checked as one) is not one to collect.
collect_ignore_glob = ["check/*/*"]
