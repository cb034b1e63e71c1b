"""Regression tests for the attacks of issue #22 outside the checker and the language server: each hostile
input is generated here (never stored large) and the CLI or the engine must hold."""

from __future__ import annotations

import bz2
import gzip
import lzma
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from rootrank.diagnose import diagnose_text
from rootrank.diagnose.fixtext import fill
from rootrank.regex_safety import backtracking_risk
from rootrank.render.common import terminal_safe
from rootrank.render.markdown import render_markdown
from tests.trust.conftest import FIXTURE_LOGS, PY, assert_well_behaved, cli_env, run_cli

TABLE_LOG = FIXTURE_LOGS / "process.killed-signal--rank1-sigkill-step4-plain" / "log.txt"
STRAGGLER_LOG = FIXTURE_LOGS / "distributed.rank-stalled--rank0-serial-checkpoint-export-15s" / "log.txt"
TRACEBACK = 'Traceback (most recent call last):\n  File "train.py", line 3, in <module>\nValueError: bad batch\n'


# --------------------------------------------------------------------------- 7, 8: the launcher's table

def test_a_line_quoting_the_root_cause_heading_does_not_swallow_the_log() -> None:
    text = STRAGGLER_LOG.read_text(encoding="utf-8")
    plain = diagnose_text(text)
    assert plain.root_cause is not None
    quoting = diagnose_text('[rank3]: print("see Root Cause (first observed failure) below")\n' + text)
    assert quoting.root_cause is not None
    assert (quoting.root_cause.rule, quoting.root_cause.rank) == (plain.root_cause.rule, plain.root_cause.rank)


@pytest.mark.parametrize("before", [0, 150, 190, 250, 399, 1000])
def test_the_table_gives_its_rank_whatever_came_before(before: int) -> None:
    log = TABLE_LOG.read_text(encoding="utf-8")
    table = log[log.index("torch.distributed.elastic.multiprocessing.errors.ChildFailedError"):]
    d = diagnose_text("".join(f"step {i} loss 0.5\n" for i in range(before)) + table)
    assert d.root_cause is not None and d.root_cause.rank == 1


# --------------------------------------------------------------------------- 9: the split worker

def test_the_split_worker_dies_with_its_parent() -> None:
    """The mechanism the worker uses (parallel._die_with): a grandchild outliving a SIGKILLed parent."""
    code = r"""
import os, sys, time
from rootrank.diagnose.parallel import _die_with
parent = os.getpid()
pid = os.fork()
if pid == 0:
    _die_with(parent)
    time.sleep(60)
    os._exit(0)
print(pid, flush=True)
time.sleep(60)
"""
    proc = subprocess.Popen([PY, "-c", code], stdout=subprocess.PIPE, env=cli_env(), text=True)
    assert proc.stdout is not None
    worker = int(proc.stdout.readline())
    time.sleep(0.5)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(10)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            os.kill(worker, 0)
        except ProcessLookupError:
            return
        with open(f"/proc/{worker}/stat") as handle:  # a zombie waiting for init is gone too
            if handle.read().split(")")[-1].split()[0] == "Z":
                return
        time.sleep(0.1)
    os.kill(worker, signal.SIGKILL)
    raise AssertionError("the worker outlived its parent")


# --------------------------------------------------------------------------- 10: Markdown injection

def test_captured_values_never_become_links_or_html() -> None:
    evil = "x` [Click here to fix](https://evil.example) <img src=x onerror=alert(1)> ``` `"
    out = fill("Read the traceback that ends in `{message}`; the step asked for {size}.\n\n```sh\necho {message}\n```",
               {"message": evil, "size": "[Click](https://evil.example)"})
    prose = out.split("\n\n")[0]
    # every captured value sits inside one code span whose fence is longer than its backtick runs
    assert "```` x` [Click here to fix](https://evil.example) <img src=x onerror=alert(1)> ``` ` ````" in prose
    assert "`[Click](https://evil.example)`" in prose
    block = out.split("\n\n")[1].splitlines()
    assert block[0] == "````sh" and block[-1] == "````"


def test_markdown_report_fences_hostile_evidence() -> None:
    d = diagnose_text(TRACEBACK.replace("bad batch", "bad ``` [Click here](https://evil.example) <b>x</b>"))
    md = render_markdown(d)
    assert "\n````text\n" in md


# --------------------------------------------------------------------------- 12: the loader's screen

@pytest.mark.parametrize("pattern", [r"(?:a{1,10}){1,10}b", r"(?:\w{1,8}\s?){1,12}$", r"\d+\.?\d*x",
                                     r"\w+\s*\w+:", r".*.*x", r"[a-z]{1,40}[a-z0-9]{1,40}!"])
def test_screen_refuses_nested_bounded_and_adjacent_overlapping_repeats(pattern: str) -> None:
    assert backtracking_risk(pattern)


@pytest.mark.parametrize("pattern", [r"(?:\d{1,3}\.){3}\d{1,3}", r"\d+(?:, \d+)*", r"[\w.]+: .*", r"\s*\S+"])
def test_screen_still_accepts_delimited_repeats(pattern: str) -> None:
    assert backtracking_risk(pattern) == ""


# --------------------------------------------------------------------------- 15: lines over 8 MiB

def test_a_line_over_8_mib_counts_as_one_line() -> None:
    # In a child: a 20 MiB line in this process would raise the peak RSS that later children inherit.
    huge = b"x" * (20 << 20)
    data = assert_well_behaved(run_cli(["diagnose", "--format", "json", "-"],
                                       stdin=b"a\nb\n" + huge + b"\n" + TRACEBACK.encode()))
    assert data["lines_read"] == 6, data["lines_read"]
    assert data["root_cause"]["evidence"][-1]["line"] == 6


# --------------------------------------------------------------------------- 16: compressed logs, no library

@pytest.mark.parametrize("compress", [gzip.compress, bz2.compress, lzma.compress])
def test_compressed_logs_are_read(compress, tmp_path: Path) -> None:
    path = tmp_path / "train.log.gz"
    path.write_bytes(compress(TRACEBACK.encode()))
    for args, stdin in (([str(path)], None), (["-"], path)):
        data = assert_well_behaved(run_cli(["diagnose", "--format", "json", *args], stdin=stdin))
        assert data["root_cause"]["rule"] == "process.uncaught-exception"


def test_zstd_and_truncated_archives_are_one_line(tmp_path: Path) -> None:
    zst = tmp_path / "train.log.zst"
    zst.write_bytes(b"\x28\xb5\x2f\xfd" + os.urandom(64))
    cut = tmp_path / "cut.log.gz"
    cut.write_bytes(gzip.compress(TRACEBACK.encode() * 100)[:60])
    for path in (zst, cut):
        run = run_cli(["diagnose", str(path)])
        assert run.returncode == 2
        assert_well_behaved(run, expect_json=False)


@pytest.mark.parametrize("kind", ["missing", "empty"])
def test_no_failure_library_is_an_error(kind: str, tmp_path: Path) -> None:
    rules = tmp_path / "rules"
    if kind == "empty":
        rules.mkdir()
    for command in (["diagnose", "-"], ["rules"]):
        run = run_cli(command, stdin=TRACEBACK.encode(), env=cli_env(ROOTRANK_RULES=str(rules)))
        assert run.returncode == 2, run.stderr
        assert "no failure library" in run.stderr


# --------------------------------------------------------------------------- 18: terminal escapes

def test_terminal_output_escapes_controls(tmp_path: Path) -> None:
    hostile = "bad \x1b]0;pwned\x07 \x9b2J \u202egnp.exe \x1b[31m"
    assert terminal_safe(hostile) == "bad \\x1b]0;pwned\\x07 \\x9b2J \\u202egnp.exe \\x1b[31m"
    path = tmp_path / "log\x1b[2J.txt"
    path.write_text(TRACEBACK.replace("bad batch", hostile), encoding="utf-8")
    for args in (["diagnose", "--color", "never", str(path)], ["diagnose", str(tmp_path / "gone\x1b[2J.txt")]):
        run = run_cli(args)
        for stream in (run.stdout, run.stderr):
            assert not any(c in stream for c in "\x1b\x9b\x9d\u202e\x07"), repr(stream[:400])


# --------------------------------------------------------------------------- 22: closed or full stdio

@pytest.mark.parametrize("command", [["diagnose", "-"], ["rules"], ["explain", "memory.cuda-oom"]])
def test_closed_or_full_stdout_is_a_plain_message(command: list[str]) -> None:
    if not Path("/dev/full").exists():
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        proc = subprocess.run([PY, "-m", "rootrank", *command], input=TRACEBACK.encode(), stdout=full,
                              stderr=subprocess.PIPE, env=cli_env(), timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.decode().strip() == "rootrank: cannot write the output: No space left on device"
    closed = subprocess.run(f'"{PY}" -m rootrank {" ".join(command)} >&-', shell=True, input=TRACEBACK.encode(),
                            stderr=subprocess.PIPE, env=cli_env(), timeout=60)
    assert closed.returncode == 2
    assert closed.stderr.decode().strip() == "rootrank: standard output is closed"
