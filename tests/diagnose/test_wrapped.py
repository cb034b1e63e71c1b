"""Logs hard-wrapped at a terminal's width (formats/wrapped.py): the same diagnosis as unwrapped.

Property test over every real fixture (tests/fixtures/logs, and the shared corpus where this machine
has it): each log as a terminal shows it (escapes rendered, a `\\r` progress bar at its last state),
then wrapped into rows of exactly W characters for W in WIDTHS, must give the root cause (entry and
initiating rank) of the same log unwrapped. Real logs that are not wrapped must stay as they are,
line numbers must be those of the rows as pasted, and joining is one pass over bounded lines.
"""

from __future__ import annotations

import hashlib
import re
from pathlib import Path

import pytest
import yaml

from rootrank.diagnose import diagnose_paths, diagnose_text
from rootrank.diagnose.formats.wrapped import MAX_JOINED_BYTES, Unwrapper, unwrap_chunks, wrap_width
from rootrank.library import load_library
from tests.conftest import FIXTURE_LOGS

CORPUS = Path("/work/shared/corpus")
WIDTHS = (80, 120, 160, 200)
LIBRARY = load_library()
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]")


def _files(case: Path) -> list[Path]:
    if (case / "log.txt").is_file():
        return [case / "log.txt"]
    return sorted(f for f in (case / "logs").rglob("*") if f.is_file())


def _cases() -> list[Path]:
    roots = [FIXTURE_LOGS] + ([CORPUS] if CORPUS.is_dir() else [])
    return [p.parent for root in roots for p in sorted(root.glob("*/expect.yaml")) if _files(p.parent)]


CASES = _cases()


def _wrapped_case(case: Path) -> object:
    """A case whose expect.yaml records `wrap_limitation`: wrapped, the log cannot be told from an unwrapped one (an
    expected failure that must keep failing until the detection improves)."""
    expect = yaml.safe_load((case / "expect.yaml").read_text()) or {}
    reason = expect.get("wrap_limitation")
    marks = [pytest.mark.xfail(reason=reason, strict=True)] if reason else []
    return pytest.param(case, id=f"{case.parent.name}/{case.name}", marks=marks)


def _rendered(line: str) -> str:
    """A line as a terminal shows it: escapes take effect, a `\\r`-rewritten bar shows its last state."""
    line = _ANSI.sub("", line)
    if "\r" in line:
        line = next((part for part in reversed(line.split("\r")) if part), "")
    return line


def _wrap(text: str, width: int | None) -> str:
    """The text as a terminal `width` columns wide wraps it (None: not wrapped)."""
    out: list[str] = []
    for line in text.split("\n"):
        line = _rendered(line)
        while width is not None and len(line) > width:
            out.append(line[:width])
            line = line[width:]
        out.append(line)
    return "\n".join(out)


def _root(case: Path, width: int | None, into: Path) -> tuple[str | None, int | None]:
    paths = []
    for f in _files(case):
        target = into / str(width) / f.relative_to(case)  # file names carry ranks: keep them
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(_wrap(f.read_text(errors="replace"), width))
        paths.append(str(target))
    root = diagnose_paths(paths, LIBRARY).root_cause
    return (root.rule, root.rank) if root is not None else (None, None)


@pytest.mark.parametrize("case", [_wrapped_case(c) for c in CASES])
def test_wrapped_log_gives_the_unwrapped_diagnosis(case: Path, tmp_path: Path) -> None:
    longest = max(len(_rendered(line)) for f in _files(case) for line in f.read_text(errors="replace").split("\n"))
    widths = [w for w in WIDTHS if w < longest]  # narrower than its longest line: something is wrapped
    if not widths:
        pytest.skip("no line is longer than the widths tried")
    unwrapped = _root(case, None, tmp_path)
    for width in widths:
        assert _root(case, width, tmp_path) == unwrapped, f"wrapped at {width}"


@pytest.mark.parametrize("case", [c for c in CASES if c.parent == FIXTURE_LOGS], ids=lambda c: c.name)
def test_real_logs_are_not_taken_as_wrapped(case: Path) -> None:
    for f in _files(case):
        assert wrap_width(f.read_bytes()) is None, f.name


def test_pasted_corpus_log_wrapped_by_its_terminal_is_recognised() -> None:
    # A real paste (an issue thread) whose terminal wrapped it at 190 columns mid-word:
    # "...in your appl" / "ication as needed."
    log = CORPUS / "mr--distributed.rendezvous--torchrun-master-port-eaddrinuse" / "log.txt"
    if not log.is_file():
        pytest.skip("the shared corpus is not on this machine")
    assert wrap_width(log.read_bytes()) == 190


OOM = ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity of "
       "79.14 GiB of which 6.75 MiB is free. Including non-PyTorch memory, this process has 79.13 GiB memory in "
       "use. Of the allocated memory 77.89 GiB is allocated by PyTorch, and 658.18 MiB is reserved by PyTorch but "
       "unallocated. If reserved but unallocated memory is large try setting "
       "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
       "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


def _oom_log() -> str:
    case = CORPUS / "mr--memory.cuda-oom--funasr-rank2-oom-service-thread-closed" / "log.txt"
    if not case.is_file():
        pytest.skip("the shared corpus is not on this machine")
    return case.read_text(errors="replace")


@pytest.mark.parametrize("width", WIDTHS)
def test_wrapped_rows_keep_their_line_numbers(width: int) -> None:
    text = _wrap(_oom_log(), None)
    plain = diagnose_text(text, library=LIBRARY).root_cause
    wrapped_text = _wrap(text, width)
    wrapped = diagnose_text(wrapped_text, library=LIBRARY).root_cause
    assert plain is not None and wrapped is not None
    assert (wrapped.rule, wrapped.rank) == (plain.rule, plain.rank)
    rows = wrapped_text.split("\n")
    for evidence in wrapped.evidence:
        # The evidence line number is that of its first row as pasted, which starts its text.
        assert evidence.text[:width].strip() in rows[evidence.line - 1], (evidence.line, evidence.text)
    assert diagnose_text(wrapped_text, library=LIBRARY).lines_read == len(wrapped_text.splitlines())


def test_rows_split_between_chunks_join_as_in_one() -> None:
    text = _wrap(OOM + "\n[rank1]: RuntimeError: unrelated\n" + OOM + "\n", 80).encode()
    whole, joins = Unwrapper(80).join(text, final=True)
    assert whole.count(b"\n") == 3 and len(joins) == text.count(b"\n") - 3
    assert OOM.encode() in whole
    lines = text.splitlines(keepends=True)
    for size in (1, 2, 3, 5):
        chunks = [b"".join(lines[i: i + size]) for i in range(0, len(lines), size)]
        pieces = list(unwrap_chunks([(c, len(c)) for c in chunks], 80))
        assert b"".join(p[0] for p in pieces) == whole
        assert sum(len(p[2]) for p in pieces) == len(joins)


def test_a_blob_of_full_rows_is_cut_at_the_cap() -> None:
    # Nothing is held from one chunk to the next past MAX_JOINED_BYTES: the join stays linear.
    rows = b"".join(hashlib.sha256(b"%d" % i).hexdigest().encode() + b"0" * 16 + b"\n" for i in range(20_000))
    step = 81 * 50  # chunks of whole lines, as LineChunks gives them
    pieces = list(unwrap_chunks([(rows[i: i + step], len(rows[i: i + step])) for i in range(0, len(rows), step)], 80))
    longest = max(len(line) for p in pieces for line in p[0].split(b"\n"))
    assert MAX_JOINED_BYTES <= longest <= MAX_JOINED_BYTES + 80


def test_records_after_a_full_row_are_not_joined() -> None:
    row = "[rank0]: " + "x" * 71
    text = "\n".join([row, "[rank1]: RuntimeError: boom", row, "Traceback (most recent call last):",
                      row, "2026-12-02 10:00:00 INFO next", row, "", row, row[:20] + " same start"]) + "\n"
    joined, joins = Unwrapper(80).join(text.encode(), final=True)
    assert joined == text.encode() and joins == []
