"""The real server with test-only faults switched on by environment variables (run as a script).

ROOTRANK_TEST_CRASH_RULE=1    registers a check rule that always raises;
ROOTRANK_TEST_ENGINE_CRASH=1  makes `check_source` itself raise unless it is asked for one rule, so the
                              server's one-rule-at-a-time fallback runs;
ROOTRANK_TEST_SLOW_LOGS=1     makes the log engine read its input slowly, 256 bytes per 5 ms, so tests can
                              edit or cancel a diagnosis while it runs, whatever the engine's speed;
ROOTRANK_TEST_CONFLICTING_FIXES=1  registers `conflicting_rules()`: two rules whose safe fixes each hold
                              alone and fail beside checkpoint.use-reentrant-explicit's (fix-all must prove
                              fixes together; tests/trust/test_fix_together.py uses them in-process too).
"""

from __future__ import annotations

import io
import os
import sys
import time
from typing import Any

PINS = "checkpoint.zz-test-pins-reentrant"
INEFFECTIVE = "checkpoint.zz-test-ineffective-fix"


def conflicting_rules() -> dict[str, Any]:
    """Rules (by id) whose safe fixes are right alone and wrong together with the real use-reentrant fix:

    - PINS flags a `checkpoint(f, x)` call (its last argument a name) that does not say `use_reentrant`
      and adds `use_reentrant=False`
      by rewriting its last positional argument `x` as `x, use_reentrant=False`: alone it compiles and the
      call is fixed; beside the real fix (`use_reentrant=True` inserted after `x`, an edit that touches
      none of PINS's) the call passes the keyword twice, a SyntaxError;
    - INEFFECTIVE flags every `checkpoint(...)` call and parenthesises its first argument: it compiles,
      with the real fix too, and the finding is still reported after it.
    """
    import ast

    from rootrank.check import edits
    from rootrank.check.registry import Rule, Violation
    from rootrank.model import Applicability, Severity

    def checkpoint_calls(semantic: Any) -> list[ast.Call]:
        return [site.node for site in semantic.calls
                if isinstance(site.node.func, ast.Name) and site.node.func.id == "checkpoint"]

    def pins(semantic: Any) -> list[Violation]:
        found = []
        for call in checkpoint_calls(semantic):
            if len(call.args) < 2 or call.keywords or not isinstance(call.args[-1], ast.Name):
                continue
            last = call.args[-1]
            text = ast.get_source_segment(semantic.source, last)
            fix = edits.fix("Pin use_reentrant=False", Applicability.SAFE,
                            edits.replace(semantic, last, f"{text}, use_reentrant=False"))
            found.append(Violation(last, "pin it", edits.fixes(fix)))
        return found

    def ineffective(semantic: Any) -> list[Violation]:
        found = []
        for call in checkpoint_calls(semantic):
            if call.args:
                first = call.args[0]
                text = ast.get_source_segment(semantic.source, first)
                fix = edits.fix("Parenthesise it", Applicability.SAFE, edits.replace(semantic, first, f"({text})"))
                found.append(Violation(call, "a fix that fixes nothing", edits.fixes(fix)))
        return found

    return {PINS: Rule(PINS, pins, Severity.WARNING), INEFFECTIVE: Rule(INEFFECTIVE, ineffective, Severity.WARNING)}


if os.environ.get("ROOTRANK_TEST_CONFLICTING_FIXES"):
    from rootrank.check.registry import RULES

    RULES.update(conflicting_rules())


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
