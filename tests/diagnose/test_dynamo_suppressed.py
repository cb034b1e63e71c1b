"""Dynamo's record of a frame it failed to compile under `suppress_errors` is a warning: convert_frame.py
logs it at W level and runs the frame eagerly. The same exception raised (E level, or a traceback) is not."""

from __future__ import annotations

from rootrank.diagnose import diagnose_text

# https://github.com/unslothai/unsloth/issues/1175 (every line of the record carries the W header).
SUPPRESSED = """\
[01:17:10.938]: W1024 01:17:10.936000 140404233111360 torch/_dynamo/convert_frame.py:1009] torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:
[01:17:10.938]: W1024 01:17:10.936000 140404233111360 torch/_dynamo/convert_frame.py:1009] NameError: name 's4' is not defined
"""


def test_a_suppressed_backend_failure_is_a_warning() -> None:
    root = diagnose_text(SUPPRESSED).root_cause
    assert root is not None
    assert (root.rule, root.severity.value) == ("compile.backend-failed", "warning")


def test_the_same_failure_raised_is_an_error() -> None:
    raised = "torch._dynamo.exc.BackendCompilerFailed: backend='inductor' raised:\nNameError: name 's4' is not defined\n"
    root = diagnose_text(raised).root_cause
    assert root is not None
    assert (root.rule, root.severity.value) == ("compile.backend-failed", "error")
