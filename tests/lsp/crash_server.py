"""The real server with a check rule that always raises (run as a script by test_robustness.py).

With ROOTRANK_TEST_ENGINE_CRASH=1, `check_source` itself also raises unless it is asked for one rule, so
the server's own one-rule-at-a-time fallback is exercised too.
"""

from __future__ import annotations

import os
import sys

import rootrank.lint
from rootrank.lint.registry import rule


@rule("checkpoint.test-always-raises")
def always_raises(semantic: object) -> list[object]:
    raise RuntimeError("boom: a broken rule")


if os.environ.get("ROOTRANK_TEST_ENGINE_CRASH"):
    _original = rootrank.lint.check_source

    def _check_source(source: str, path: str, options: rootrank.lint.CheckOptions | None = None) -> list:
        if options is None or len(options.select) != 1:
            raise RuntimeError("boom: the whole check run")
        return _original(source, path, options)

    rootrank.lint.check_source = _check_source  # type: ignore[assignment]

if __name__ == "__main__":
    from rootrank.lsp.server import main

    sys.exit(main())
