"""The real server with test-only faults switched on by environment variables (run as a script).

ROOTRANK_TEST_CRASH_RULE=1    registers a check rule that always raises;
ROOTRANK_TEST_ENGINE_CRASH=1  makes `check_source` itself raise unless it is asked for one rule, so the
                              server's one-rule-at-a-time fallback runs;
ROOTRANK_TEST_SLOW_LOGS=1     makes the log engine read its input slowly, 256 bytes per 5 ms, so tests can
                              edit or cancel a diagnosis while it runs, whatever the engine's speed.
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import Any

if os.environ.get("ROOTRANK_TEST_CRASH_RULE"):
    from rootrank.check.registry import rule

    @rule("checkpoint.test-always-raises")
    def always_raises(semantic: object) -> list[object]:
        raise RuntimeError("boom: a broken rule")


if os.environ.get("ROOTRANK_TEST_ENGINE_CRASH"):
    import rootrank.check

    _original_check = rootrank.check.check_source

    def _check_source(source: str, path: str, options: Any = None, cancelled: Any = None) -> list:
        if options is None or len(options.select) != 1:
            raise RuntimeError("boom: the whole check run")
        return _original_check(source, path, options, cancelled)

    rootrank.check.check_source = _check_source  # type: ignore[assignment]


if os.environ.get("ROOTRANK_TEST_SLOW_LOGS"):
    import rootrank.diagnose

    _original_feed = rootrank.diagnose.Pipeline.feed_stream

    def _slow_feed(self: Any, source: str, handle: Any, *args: Any, **kwargs: Any) -> None:
        data = bytearray()
        while piece := handle.read(256):  # the server's stream raises here once the diagnosis is cancelled
            data += piece
            time.sleep(0.005)
        _original_feed(self, source, io.BytesIO(bytes(data)), *args, **kwargs)

    rootrank.diagnose.Pipeline.feed_stream = _slow_feed  # type: ignore[method-assign]


if __name__ == "__main__":
    from rootrank.lsp.server import main

    sys.exit(main())
