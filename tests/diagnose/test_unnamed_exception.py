"""A traceback whose exception no entry names (a class not called ...Error or ...Exception) is still read as
that exception: its class and message are in the diagnosis and the failure is medium, not low; a traceback
cut inside its frames stays low."""

from __future__ import annotations

import pytest

from rootrank.diagnose import diagnose_text
from rootrank.diagnose.initiator import exception_of_last_line

FRAMES = [
    "Traceback (most recent call last):",
    '  File "/usr/local/lib/python3.10/dist-packages/datasets/packaged_modules/json/json.py", line 122, in _generate_tables',
    "    pa_table = paj.read_json(",
    '  File "pyarrow/error.pxi", line 100, in pyarrow.lib.check_status',
]


@pytest.mark.parametrize(("line", "expected"), [
    ("pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row 0",
     {"exception": "pyarrow.lib.ArrowInvalid", "message": "JSON parse error: Missing a name for object member. in row 0"}),
    ("jinja2.exceptions.TemplateNotFound: chat.jinja", {"exception": "jinja2.exceptions.TemplateNotFound",
                                                         "message": "chat.jinja"}),
    ("StopIteration", {}),  # no module path and no message: a bare word is not taken for an exception
    ("Killed", {}),
    ("    return forward_call(*args, **kwargs)", {}),
    ('  File "/job/train.py", line 3, in <module>', {}),
    ("Interrupted: stop requested", {"exception": "Interrupted", "message": "stop requested"}),
])
def test_the_last_line_names_its_exception_as_python_prints_it(line: str, expected: dict[str, str]) -> None:
    assert exception_of_last_line(line) == expected


def test_an_exception_no_entry_names_is_the_failure_with_medium_confidence() -> None:
    text = "\n".join([*FRAMES, "pyarrow.lib.ArrowInvalid: JSON parse error: Missing a name for object member. in row 0"])
    cause = diagnose_text(text + "\n").root_cause
    assert cause is not None and cause.rule == "process.uncaught-exception"
    assert cause.confidence is not None and cause.confidence.failure.level == "medium"
    assert "pyarrow.lib.ArrowInvalid" in cause.why and cause.fields["exception"] == "pyarrow.lib.ArrowInvalid"


def test_a_traceback_cut_in_its_frames_stays_low() -> None:
    cause = diagnose_text("\n".join(FRAMES) + "\n").root_cause
    assert cause is not None and cause.rule == "process.uncaught-exception"
    assert cause.confidence is not None and cause.confidence.failure.level == "low"
