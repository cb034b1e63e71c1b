"""Whether a matched line is a warning or an error. Dynamo's record of a frame it failed to compile under
`suppress_errors` is a warning: convert_frame.py logs it at W level and runs the frame eagerly; the same
exception raised is an error. Anomaly mode's "Error detected in ..." is an error although Python prints
it as a UserWarning: it is printed only while the backward pass raises (`warned_on_failure`)."""

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


# https://github.com/hao-ai-lab/FastVideo/issues/886: the warning, the RuntimeError after it cut off.
ANOMALY = ("/usr/lib/python3/dist-packages/torch/autograd/graph.py:824: UserWarning: Error detected in "
           "GeneratedBackwardFor_vsa_block_sparse_attn_triton_defaultBackward. Traceback of forward call that "
           "caused the error:\n")


def test_anomaly_modes_warning_is_an_error() -> None:
    root = diagnose_text(ANOMALY).root_cause
    assert root is not None
    assert (root.rule, root.severity.value) == ("numerics.nan-loss", "error")


def test_another_python_warning_stays_a_warning() -> None:
    warned = ("/usr/lib/python3/dist-packages/torch/utils/checkpoint.py:86: UserWarning: None of the inputs have "
              "requires_grad=True. Gradients will be None\n")
    root = diagnose_text(warned).root_cause
    assert root is None or root.severity.value == "warning"

