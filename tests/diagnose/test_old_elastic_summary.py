"""torch 1.9-1.10's failure summary: `Root Cause:` / `Other Failures:` headings, the error file's JSON under `msg:`,
framed by rows of `*` and `=` as wide as its widest line (which must not read as a terminal's wrap)."""

from __future__ import annotations

from rootrank.diagnose import diagnose_text
from rootrank.diagnose.formats.wrapped import wrap_width
from rootrank.diagnose.lines import LineScanner

# The layout of torch 1.10's ChildFailedError.format_msg (the 'before' sample of pytorch/pytorch PR 65041),
# with a second failure listed under "Other Failures:" as that release printed them.
WIDTH = 120
SUMMARY = "\n".join([
    "*" * WIDTH,
    " " * 50 + "run_script_path FAILED" + " " * 48,
    "=" * WIDTH,
    "Root Cause:",
    "[0]:",
    "  time: 2021-09-14_22:01:06",
    "  rank: 0 (local_rank: 0)",
    "  exitcode: 1 (pid: 1092727)",
    "  error_file: /tmp/torchelastic_aeyvjbpe/none_8zuih7tj/attempt_0/0/error.json",
    "  msg:",
    "    {",
    '      "message": "RuntimeError: rasing error since --throw was specified",',
    '      "extraInfo": {',
    '        "timestamp": "1631682066"',
    "      }",
    "    }",
    "=" * WIDTH,
    "Other Failures:",
    "[1]:",
    "  time: 2021-09-14_22:01:07",
    "  rank: 1 (local_rank: 1)",
    "  exitcode: -15 (pid: 1092728)",
    "  error_file: <N/A>",
    "  msg: Signal 15 (SIGTERM) received by PID 1092728",
    "*" * WIDTH,
    "",
])


def test_the_frame_of_the_summary_is_not_a_terminal_wrap() -> None:
    assert wrap_width(SUMMARY.encode()) is None


def test_the_old_headings_open_the_table_and_tell_the_root_cause_from_the_others() -> None:
    scanner = LineScanner()
    lines = list(scanner.scan("x", enumerate(SUMMARY.split("\n"), 1)))
    exits = {e.rank: e for e in scanner.launcher.report.exits}
    assert exits[0].root_cause and exits[0].exitcode == 1
    assert not exits[1].root_cause and exits[1].exitcode == -15
    message = next(line for line in lines if '"message"' in line.text)
    assert message.quoted and message.rank == 0


def test_the_recorded_error_names_the_failure_and_its_rank() -> None:
    root = diagnose_text(SUMMARY).root_cause
    assert root is not None and root.rule == "process.uncaught-exception" and root.rank == 0
    assert "rasing error since --throw was specified" in "\n".join(e.text for e in root.evidence)
