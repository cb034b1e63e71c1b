"""Tests that need a heavy library of the user's environment (torch, transformers, Ray, py-spy).

Locally such a test is skipped when the library is missing; in CI (`CI=true`, or
`ROOTRANK_REQUIRE_HEAVY=1`) a missing library is a failure, so CI never passes by skipping the real
thing. `scripts/test.sh` installs these libraries into the test environment only: the package itself
never depends on them.
"""

from __future__ import annotations

import importlib
import os
import shutil
import sys
from types import ModuleType

import pytest


def heavy_required() -> bool:
    """True where a missing heavy library must fail the run instead of skipping the test."""
    return os.environ.get("ROOTRANK_REQUIRE_HEAVY") == "1" or os.environ.get("CI", "").lower() == "true"


def require_module(name: str) -> ModuleType:
    """Import `name` or skip (locally) / fail (CI) the calling test."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if heavy_required():
            pytest.fail(f"{name} is required in CI but cannot be imported: {exc}")
        pytest.skip(f"{name} is not installed")


def require_program(name: str) -> str:
    """The path of program `name` on PATH or beside this interpreter (installed into the test
    environment, not activated), or skip (locally) / fail (CI) the calling test."""
    found = shutil.which(name) or shutil.which(name, path=os.path.dirname(sys.executable))
    if found is None:
        if heavy_required():
            pytest.fail(f"{name} is required in CI but is not on PATH")
        pytest.skip(f"{name} is not on PATH")
    return found


def require_installed(name: str) -> None:
    """Skip (locally) / fail (CI) unless `name` is installed, without importing it: for tests that run it
    in a child process only (importing torch here would grow this process, and every child forked after
    it would report that size as its peak RSS)."""
    import importlib.util

    if importlib.util.find_spec(name) is None:
        if heavy_required():
            pytest.fail(f"{name} is required in CI but is not installed")
        pytest.skip(f"{name} is not installed")
