"""The check engine's contracts: never raises, select/ignore/noqa, rule isolation, registry, positions."""

from __future__ import annotations

import ast
import logging
from pathlib import Path

import pytest

from rootrank.check import SYNTAX_ERROR, CheckOptions, check_source
from rootrank.check.fixes import apply_fixes
from rootrank.check.registry import RULES, DuplicateRuleError, Rule, Violation, rule
from rootrank.model import Applicability, Severity

MISSING = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
RULE = "checkpoint.use-reentrant-explicit"


def test_syntax_error_is_one_finding() -> None:
    findings = check_source("from torch.utils.checkpoint import checkpoint\ndef f(:\n", "bad.py")
    assert [(f.rule, f.line, f.severity) for f in findings] == [(SYNTAX_ERROR, 2, Severity.ERROR)]


def test_deeply_nested_expression_does_not_crash() -> None:
    source = "from torch.utils.checkpoint import checkpoint\nx = " + "(" * 5000 + "1" + ")" * 5000 + "\n"
    findings = check_source(source, "deep.py")
    assert [f.rule for f in findings] == [SYNTAX_ERROR]


def test_deep_but_parseable_nesting_is_checked() -> None:
    source = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, " + "-" * 900 + "x)\n"
    assert [f.rule for f in check_source(source, "deep.py")] == [RULE]


def test_null_bytes_do_not_crash() -> None:
    assert [f.rule for f in check_source("checkpoint\x00(", "nul.py")] == [SYNTAX_ERROR]


def test_files_without_checkpointing_are_not_parsed() -> None:
    assert check_source("def f(:\n", "bad.py") == []  # skipped before parsing, like torchfix


def test_select_and_ignore_by_prefix() -> None:
    assert check_source(MISSING, "a.py", CheckOptions(select=("checkpoint",)))
    assert check_source(MISSING, "a.py", CheckOptions(select=("checkpoint.use-reentrant",)))
    assert not check_source(MISSING, "a.py", CheckOptions(select=("checkpoint.us",)))  # a prefix ends at . or -
    assert not check_source(MISSING, "a.py", CheckOptions(ignore=("checkpoint",)))
    assert not check_source(MISSING, "a.py", CheckOptions(select=("checkpoint.overhead",)))


@pytest.mark.parametrize("comment, silenced", [
    ("# noqa", True), ("# noqa: checkpoint.use-reentrant-explicit", True), ("#NOQA:checkpoint", True),
    ("# noqa: checkpoint.overhead, checkpoint.use-reentrant-explicit", True), ("# noqa: checkpoint.overhead", False),
])
def test_noqa(comment: str, silenced: bool) -> None:
    source = MISSING.replace("x)\n", f"x)  {comment}\n")
    assert bool(check_source(source, "a.py")) is not silenced
    assert check_source(source, "a.py", CheckOptions(noqa=False))


def test_a_crashing_rule_is_isolated(monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    def explode(semantic: object) -> list[Violation]:
        raise RuntimeError("boom")

    monkeypatch.setitem(RULES, "checkpoint.zz-explodes", Rule("checkpoint.zz-explodes", explode, Severity.ERROR))
    with caplog.at_level(logging.ERROR):
        findings = check_source(MISSING, "a.py")
    assert [f.rule for f in findings] == [RULE]
    assert "checkpoint.zz-explodes" in caplog.text


def test_duplicate_rule_id_fails_at_registration() -> None:
    with pytest.raises(DuplicateRuleError):
        rule(RULE)(lambda semantic: [])


def test_every_rule_has_documentation_sections() -> None:
    import sys

    for rule_id, registered in RULES.items():
        doc = sys.modules[registered.function.__module__].__doc__ or ""
        assert doc.startswith(rule_id), rule_id
        for section in ("## What it does", "## Why is this bad?", "## Fix safety"):
            assert section in doc, f"{rule_id}: missing {section}"


def test_positions_are_characters_not_bytes() -> None:
    source = "from torch.utils.checkpoint import checkpoint\nh = 'é' ; y = checkpoint(f, x)\n"
    (finding,) = check_source(source, "u.py")
    assert source.splitlines()[1][finding.column - 1:finding.end_column - 1] == "checkpoint"
    fixed = apply_fixes(source, [finding], unsafe=False)
    assert fixed.splitlines()[1].endswith("checkpoint(f, x, use_reentrant=True)")


def test_the_preferred_fix_is_the_safe_one_and_the_recommendation_follows() -> None:
    (finding,) = check_source(MISSING, "a.py")
    assert finding.fix is not None and finding.fix.applicability is Applicability.SAFE
    assert "use_reentrant=True" in finding.fix.edits[0].text
    assert [f.applicability for f in finding.ordered_fixes] == [Applicability.SAFE, Applicability.UNSAFE]
    assert "use_reentrant=False" in finding.fixes[0].edits[0].text  # the rule's recommendation, listed first
    assert apply_fixes(MISSING, [finding]).endswith("checkpoint(f, x, use_reentrant=True)\n")
    assert apply_fixes(MISSING, [finding], unsafe=True).endswith("checkpoint(f, x, use_reentrant=False)\n")


def test_overlapping_fixes_apply_once() -> None:
    source = "from torch.utils.checkpoint import checkpoint\nfrom torch.autograd import grad\n" \
             "y = checkpoint(f, x)\ngrad(y, x)\n"
    findings = check_source(source, "a.py")
    assert {f.rule for f in findings} == {RULE, "checkpoint.reentrant-autograd-grad"}
    fixed = apply_fixes(source, findings, unsafe=True)
    assert "checkpoint(f, x, use_reentrant=False)\n" in fixed
    ast.parse(fixed)


def test_stays_silent_when_the_mode_cannot_be_known() -> None:
    source = ("import torch\nfrom torch.utils.checkpoint import checkpoint\n"
              "def forward(x, mode):\n    return checkpoint(f, x, use_reentrant=mode)\n"
              "forward = torch.compile(forward)\n")
    assert check_source(source, "a.py") == []


def test_parameter_defaults_are_followed() -> None:
    source = ("import torch\nfrom torch.utils.checkpoint import checkpoint\n"
              "@torch.compile\ndef forward(x, mode=True):\n    return checkpoint(f, x, use_reentrant=mode)\n")
    assert [f.rule for f in check_source(source, "a.py")] == ["checkpoint.reentrant-compile"]


def _whole_file(monkeypatch: pytest.MonkeyPatch) -> None:
    from rootrank.check import walker

    monkeypatch.setattr(walker, "split_chunks", lambda source: [(1, source)])


@pytest.mark.parametrize("case", sorted(p for p in (Path(__file__).parent / "check").glob("*/*.py")
                                        if ".fixed" not in p.suffixes), ids=lambda p: p.name)
def test_chunked_walk_equals_whole_file_walk(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    source = case.read_text(encoding="utf-8")
    chunked = check_source(source, case.name)
    _whole_file(monkeypatch)
    assert check_source(source, case.name) == chunked


def test_a_cut_inside_a_string_falls_back_to_the_whole_file() -> None:
    source = ('from torch.utils.checkpoint import checkpoint\nDOC = """\ndef not_code(:\n"""\n\n'
              "def f(x):\n    return checkpoint(g, x)\n")
    assert [(f.rule, f.line) for f in check_source(source, "a.py")] == [(RULE, 7)]


def test_syntax_error_in_one_chunk_is_reported_at_its_line() -> None:
    source = "from torch.utils.checkpoint import checkpoint\n\n\ndef f(x):\n    return checkpoint(g, x)\n\n\n" \
             "def broken(:\n    pass\n"
    assert [(f.rule, f.line) for f in check_source(source, "a.py")] == [(SYNTAX_ERROR, 8)]


def test_a_keystroke_reuses_the_other_chunks() -> None:
    from rootrank.check import walker

    body = "".join(f"\n\ndef f{i}(x):\n    return checkpoint(g, x, use_reentrant=False)\n" for i in range(50))
    source = "from torch.utils.checkpoint import checkpoint\n" + body
    check_source(source, "a.py")
    before = walker._chunk_facts.cache_info()
    edited = source.replace("def f7(x):", "def f7(x, y):")
    assert check_source(edited, "a.py") == []
    after = walker._chunk_facts.cache_info()
    assert after.misses - before.misses == 1


@pytest.mark.parametrize("case", sorted(p for p in (Path(__file__).parent / "check").glob("*/*.py")
                                        if ".fixed" not in p.suffixes), ids=lambda p: p.name)
def test_skipping_uninteresting_statements_changes_nothing(case: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The keyword pre-filter only saves time: walking every statement finds the same things."""
    from rootrank.check import walker
    from rootrank.check.source import Interest

    source = case.read_text(encoding="utf-8")
    filtered = check_source(source, case.name)
    walker._chunk_facts.cache_clear()
    monkeypatch.setattr(walker, "interest_of",
                        lambda text, first, aliases: Interest(range(first, first + text.count("\n") + 2)))
    try:
        assert check_source(source, case.name) == filtered
    finally:
        walker._chunk_facts.cache_clear()


@pytest.mark.parametrize("newline", ["\r\n", "\r"])
def test_other_line_endings(newline: str) -> None:
    source = ("from torch.utils.checkpoint import checkpoint\n\n\ndef f(x):\n    return checkpoint(g, x)\n"
              "\n\ndef h(x):\n    return checkpoint(g, x)\n").replace("\n", newline)
    findings = check_source(source, "a.py")
    assert [(f.rule, f.line, f.column) for f in findings] == [(RULE, 5, 12), (RULE, 9, 12)]
    fixed = apply_fixes(source, findings)
    assert fixed == source.replace("checkpoint(g, x)", "checkpoint(g, x, use_reentrant=True)")
    yaml_source = "output_dir: out\r\ngradient_checkpointing: true\r\n"
    fixed_yaml = apply_fixes(yaml_source, check_source(yaml_source, "args.yaml"))
    assert fixed_yaml == "output_dir: out\r\ngradient_checkpointing: true\r\n" \
                         "gradient_checkpointing_kwargs: {use_reentrant: true}\r\n"
