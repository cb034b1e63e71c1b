"""`rootrank check` on hostile code: syntax errors, bad encodings, deep nesting, huge files, files that change
under it; and properties of the fixes on mutated real fixtures (parseable, idempotent, local)."""

from __future__ import annotations

import ast
import json
import os
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from rootrank.check import check_source
from rootrank.check.fixes import apply_fixes, choose
from rootrank.check.source import Locator
from tests.trust.conftest import REPO, assert_well_behaved, run_cli

CHECK_FIXTURES = REPO / "tests" / "check"
HEADER = "import torch\nfrom torch.utils.checkpoint import checkpoint\n\n\ndef forward(f, x):\n    return checkpoint(f, x)\n"

HOSTILE_SOURCES: dict[str, str] = {
    "syntax-error.py": HEADER + "def broken(:\n    checkpoint(\n",
    "unterminated-string.py": HEADER + "s = '''never closed\n",
    "bad-indent.py": HEADER + "  x = 1\n y = 2\n",
    "nul-byte.py": HEADER + "x = 1\x00\n",
    "nested-parens.py": HEADER + "x = " + "(" * 5000 + "1" + ")" * 5000 + "\n",
    "nested-lists.py": HEADER + "x = " + "[" * 5000 + "1" + "]" * 5000 + "\n",
    "deep-binop.py": HEADER + "x = " + "+".join(["a"] * 50_000) + "\n",
    "deep-calls.py": HEADER + "x = f" + "()" * 50_000 + "\n",
    "deep-ternary.py": HEADER + "x = " + "a if b else " * 5000 + "c\n",
    "deep-unary.py": HEADER + "x = " + "-" * 20_000 + "1\n",
    "deep-lambda.py": HEADER + "x = " + "lambda: " * 5000 + "c\n",
    "deep-but-valid.py": HEADER + "y = checkpoint(f, " + "+".join(["a"] * 900) + ")\n",
    "long-bool.py": HEADER + "x = " + " and ".join(["checkpoint(f, a)"] * 300) + "\n",
    "nested-defs.py": HEADER + "".join("    " * i + f"def f{i}():\n" for i in range(99)) + "    " * 99 + "return checkpoint(f, x)\n",
    "crlf.py": HEADER.replace("\n", "\r\n") + "y = checkpoint(f, x)\r\n",
    "cr-only.py": HEADER.replace("\n", "\r") + "y = checkpoint(f, x)\r",
    "unicode.py": HEADER + "# \u2028 \x85 \x0c 𝔘𝔫𝔦𝔠𝔬𝔡𝔢\nü = 0; y = checkpoint(f, 'ü𝔘', x)\n",
    "long-line.py": HEADER + "y = checkpoint(f, x) # " + "x" * 300_000 + "\n",
    "empty.py": "",
    "config.json": '{"gradient_checkpointing": true, ' * 3000,
    "config.yaml": "gradient_checkpointing: [" * 3000,
    "config.sh": "--recompute-num-layers " + "\\\n" * 5000,
}


def test_hostile_sources_via_the_cli(tmp_path: Path) -> None:
    for name, text in HOSTILE_SOURCES.items():
        (tmp_path / name).write_text(text, encoding="utf-8", newline="")
    run = run_cli(["check", "--format", "json", str(tmp_path)])
    assert run.returncode in (0, 1), run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr[-3000:]
    data = json.loads(run.stdout)
    paths = {Path(f["path"]).name for f in data.get("findings", data if isinstance(data, list) else [])}
    for name in ("syntax-error.py", "nested-parens.py", "deep-binop.py", "nul-byte.py", "unicode.py"):
        assert name in paths, (name, sorted(paths))


def test_hostile_sources_with_fix(tmp_path: Path) -> None:
    for name, text in HOSTILE_SOURCES.items():
        (tmp_path / name).write_text(text, encoding="utf-8", newline="")
    run = run_cli(["check", "--fix", "--unsafe-fixes", str(tmp_path)])
    assert run.returncode in (0, 1), run.stderr[-3000:]
    assert "Traceback" not in run.stderr and "internal error" not in run.stderr, run.stderr[-3000:]
    for name, text in HOSTILE_SOURCES.items():
        if not name.endswith(".py"):
            continue
        try:
            ast.parse(text)
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            assert (tmp_path / name).read_bytes() == text.encode(), f"{name} could not be parsed but was changed"
            continue
        ast.parse((tmp_path / name).read_bytes())


@pytest.mark.parametrize("data", [b"x = '\xff\xfe'\nfrom torch.utils.checkpoint import checkpoint\n",
                                  b"\xff" * 1000, "# é\n".encode("latin-1") + b"checkpoint()\n"])
def test_non_utf8_source_is_one_line(data: bytes, tmp_path: Path) -> None:
    path = tmp_path / "latin.py"
    path.write_bytes(data)
    run = run_cli(["check", str(path)])
    assert run.returncode == 2, (run.returncode, run.stderr)
    assert_well_behaved(run, expect_json=False)
    assert "latin.py" in run.stderr


def test_missing_path_is_one_line(tmp_path: Path) -> None:
    run = run_cli(["check", str(tmp_path / "nope.py")])
    assert run.returncode == 2
    assert_well_behaved(run, expect_json=False)


def test_garbage_on_stdin() -> None:
    run = run_cli(["check", "--stdin-filename", "x.py", "-"], stdin=os.urandom(0) + bytes(range(256)) * 100)
    assert run.returncode in (1, 2)
    assert_well_behaved(run, expect_json=False)


def test_fifo_in_a_checked_directory(tmp_path: Path) -> None:
    (tmp_path / "ok.py").write_text(HEADER)
    os.mkfifo(tmp_path / "pipe.py")
    run = run_cli(["check", str(tmp_path)], timeout=2.5, allow_timeout=True)
    assert not run.killed, "rootrank check hung on a FIFO"
    assert_well_behaved(run, expect_json=False)


def test_50k_line_file(tmp_path: Path) -> None:
    body = "".join(f"v{i} = block{i % 7}(x) + {i}\n" for i in range(50_000))
    path = tmp_path / "big.py"
    path.write_text(HEADER + body + "y = checkpoint(f, x)\n")
    run = run_cli(["check", "--format", "json", str(path)], timeout=60)
    assert run.returncode == 1, run.stderr[-2000:]
    assert run.seconds < 30


def _fix_time(n: int) -> float:
    source = "from torch.utils.checkpoint import checkpoint\n" + "".join(
        f"v{i} = checkpoint(f, x{i})\n" for i in range(n))
    findings = check_source(source, "many.py")
    assert len(findings) >= n
    start = time.perf_counter()
    apply_fixes(source, findings)
    return time.perf_counter() - start


def test_apply_fixes_is_linear_in_the_number_of_fixes() -> None:
    # Best of three on each side: a pause of the shared machine (another process, a GC cycle) in one
    # timing is not the algorithm's cost.
    small = min(_fix_time(700) for _ in range(3))
    large = min(_fix_time(2800) for _ in range(3))
    assert large < 8 * small + 0.05, f"700 fixes {small:.2f}s, 2800 fixes {large:.2f}s"


def test_file_changing_between_check_and_fix(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    import rootrank.check.cli as check_cli
    from rootrank.cli import main

    path = tmp_path / "train.py"
    path.write_text(HEADER)
    edited = HEADER + "# the user's edit, saved while rootrank was checking\ny = checkpoint(f, x)\n"
    real = check_cli.check_source
    calls = [0]

    def check_while_the_editor_saves(source: str, name: str, options=None):  # type: ignore[no-untyped-def]
        calls[0] += 1
        if calls[0] == 1:
            path.write_text(edited)
        return real(source, name, options)

    monkeypatch.setattr(check_cli, "check_source", check_while_the_editor_saves)
    code = main(["check", "--fix", str(path)])
    capsys.readouterr()
    assert code in (0, 1, 2)
    assert "the user's edit" in path.read_text(), "the concurrent edit was lost"


# --------------------------------------------------------------------------- fix properties (Hypothesis)


def _fixable_corpus() -> list[tuple[str, str]]:
    corpus = []
    for path in sorted(CHECK_FIXTURES.glob("*/*")):
        if path.suffix not in (".py", ".json", ".yaml", ".yml", ".sh") or ".fixed." in path.name:
            continue
        text = path.read_text(encoding="utf-8")
        if any(f.fixes for f in check_source(text, path.name)):
            corpus.append((path.name, text))
    return corpus


CORPUS = _fixable_corpus()
MUTATIONS = st.sampled_from(["blank", "comment", "unicode-comment", "formfeed", "prefix-statement", "crlf",
                             "trailing-space"])


def mutate(name: str, text: str, ops: list[tuple[int, str]]) -> str:
    crlf = any(op == "crlf" for _, op in ops)
    lines = text.split("\n")
    for where, op in sorted(ops, reverse=True):
        i = where % (len(lines) + 1)
        line = lines[i] if i < len(lines) else ""
        indent = line[: len(line) - len(line.lstrip())] if line.strip() else ""
        if op == "blank":
            lines.insert(i, "")
        elif op == "comment":
            lines.insert(i, indent + "# checkpoint(x) use_reentrant=True  # noqa-not")
        elif op == "unicode-comment":
            lines.insert(i, indent + "# ü 𝔘𝔫𝔦 \u2028 \x85 漢字")
        elif op == "formfeed" and i < len(lines) and not indent:
            lines[i] = "\x0c" + line
        elif op == "prefix-statement" and i < len(lines) and name.endswith(".py") and line.strip():
            lines[i] = indent + "ü𝔘 = 0; " + line.lstrip()
        elif op == "trailing-space" and i < len(lines):
            lines[i] = line + "  "
    out = "\n".join(lines)
    return out.replace("\n", "\r\n") if crlf else out


def parses(name: str, text: str) -> bool:
    if not name.endswith(".py"):
        return True
    try:
        ast.parse(text)
    except (SyntaxError, ValueError):
        return False
    return True


def spans(source: str, fix) -> list[tuple[int, int]]:  # type: ignore[no-untyped-def]
    locator = Locator(source)
    return [(locator.offset(e.line, e.column), locator.offset(e.end_line, e.end_column)) for e in fix.edits]


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.filter_too_much, HealthCheck.too_slow])
@given(case=st.sampled_from(CORPUS), ops=st.lists(st.tuples(st.integers(0, 10_000), MUTATIONS), max_size=6),
       unsafe=st.booleans())
def test_fixes_parse_are_idempotent_and_local(case: tuple[str, str], ops: list[tuple[int, str]], unsafe: bool) -> None:
    name, original = case
    source = mutate(name, original, ops)
    assume(parses(name, source))
    findings = check_source(source, name)
    fixed = apply_fixes(source, findings, unsafe=unsafe)
    # 1. every fix yields parseable code
    assert parses(name, fixed), fixed
    # 2. applying the fixes twice equals applying them once
    again = apply_fixes(fixed, check_source(fixed, name), unsafe=unsafe)
    assert again == fixed, (source, fixed, again)
    # 3. each fix alone touches only its own range
    for finding in findings:
        fix = choose(finding, unsafe)
        if fix is None:
            continue
        alone = apply_fixes(source, [finding], unsafe=unsafe)
        ranges = spans(source, fix)
        start, end = min(s for s, _ in ranges), max(e for _, e in ranges)
        tail = len(source) - end
        assert alone[:start] == source[:start], (finding.rule, start)
        assert alone[len(alone) - tail:] == source[end:], (finding.rule, end)
        assert parses(name, alone), (finding.rule, alone)


def test_corpus_is_not_empty() -> None:
    assert len(CORPUS) >= 10, [n for n, _ in CORPUS]
