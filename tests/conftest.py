"""Shared test helpers: paths of the repository's fixtures."""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
FIXTURE_LOGS = REPO / "tests" / "fixtures" / "logs"
EXAMPLES = REPO / "examples"

# tests/check/ holds `rootrank check` cases, read as text by tests/test_check_fixtures.py; a case named like
# a test module (`test_*.py`, to be checked as one) is not one to collect.
collect_ignore_glob = ["check/*/*"]


# A test that hangs must fail alone, with its stack, not hold the whole run until CI's own limit: past
# ROOTRANK_TEST_TIMEOUT seconds (default 600; the slowest test takes about a minute) every thread's stack
# is dumped and the test is interrupted with an error. SIGALRM reaches the main thread, where pytest and
# pytest-asyncio's event loops run, so blocking waits (a subprocess, a socket, an event loop) are broken too.
import faulthandler  # noqa: E402
import os  # noqa: E402
import signal  # noqa: E402
import sys  # noqa: E402
from collections.abc import Iterator  # noqa: E402

import pytest  # noqa: E402

TEST_TIMEOUT = int(os.environ.get("ROOTRANK_TEST_TIMEOUT", "600"))


class HungTestError(Exception):
    """Raised in a test that ran past ROOTRANK_TEST_TIMEOUT."""


def _interrupt(signum: int, frame: object) -> None:
    faulthandler.dump_traceback(file=sys.stderr, all_threads=True)
    raise HungTestError(f"the test ran past {TEST_TIMEOUT} s (ROOTRANK_TEST_TIMEOUT); stacks above")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if TEST_TIMEOUT <= 0 or not hasattr(signal, "SIGALRM"):
        return (yield)
    previous = signal.signal(signal.SIGALRM, _interrupt)
    signal.alarm(TEST_TIMEOUT)
    try:
        return (yield)
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
