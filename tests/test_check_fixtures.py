"""Golden tests for `rootrank check`, discovered from tests/check/<rule-id>/<case>.<py|json|yaml|yml|sh>.

Each case has `<case>.expected.txt` (one `line:col rule message` per finding, sorted as reported) and,
when a safe fix changes it, `<case>.fixed.<ext>` (the file after `rootrank check --fix`). A new case is
a new file; no test code changes. Regenerate the goldens after a deliberate change, then review the diff:

    ROOTRANK_UPDATE_GOLDEN=1 .venv/bin/pytest tests/test_check_fixtures.py
    # or: .venv/bin/python tests/test_check_fixtures.py --update-golden
"""

from __future__ import annotations

import ast
import dataclasses
import json
import os
import sys
from pathlib import Path

import pytest
import yaml

from rootrank.check import check_source, fix_source
from rootrank.check.configs import DEFAULT_SEVERITY
from rootrank.check.fixes import apply_fixes
from rootrank.check.notebook import apply_to_cells, notebook_module, parse_notebook
from rootrank.check.registry import RULES
from rootrank.check.source import Locator
from rootrank.model import Applicability, Finding, Fix

ROOT = Path(__file__).parent / "check"
SUFFIXES = (".py", ".ipynb", ".json", ".yaml", ".yml", ".sh")
UPDATE = os.environ.get("ROOTRANK_UPDATE_GOLDEN") == "1"
CASES = sorted(p for p in ROOT.glob("*/*") if p.suffix in SUFFIXES and ".fixed" not in p.suffixes)


def _id(path: Path) -> str:
    return f"{path.parent.name}/{path.name}"


def _name(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def render(findings: list[Finding]) -> str:
    return "".join(f"{'' if f.cell is None else f'cell {f.cell}:'}{f.line}:{f.column} {f.rule} {f.message}\n"
                   for f in findings)


def fix_all(source: str, name: str, unsafe: bool) -> str:
    """What `rootrank check --fix` does to a file: fix, re-check, until nothing changes."""
    fixed, _ = fix_source(source, name, unsafe=unsafe)
    assert fix_source(fixed, name, unsafe=unsafe)[0] == fixed, f"{name}: fixes did not converge"
    return fixed


def _fixed_path(case: Path) -> Path:
    return case.with_name(f"{case.stem}.fixed{case.suffix}")


def parses(text: str, suffix: str) -> None:
    if suffix == ".py":
        ast.parse(text)
    elif suffix == ".ipynb":
        ast.parse(notebook_module(parse_notebook(text)).text)
    elif suffix == ".json":
        json.loads(text)
    elif suffix in (".yaml", ".yml"):
        yaml.safe_load(text)


def test_case_names_are_unique() -> None:
    stems = [(p.parent.name, p.stem) for p in CASES]
    assert len(stems) == len(set(stems)), "two cases share a name (and so their .expected.txt)"


def test_there_are_cases_for_every_rule() -> None:
    folders = {p.parent.name for p in CASES}
    assert set(RULES) <= folders, f"rules without fixtures: {sorted(set(RULES) - folders)}"
    assert folders <= set(RULES) | set(DEFAULT_SEVERITY) | {"clean"}, "a folder is not named after a rule id"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_findings(case: Path) -> None:
    actual = render(check_source(case.read_text(encoding="utf-8"), _name(case)))
    expected_path = case.with_name(f"{case.stem}.expected.txt")
    if UPDATE:
        expected_path.write_text(actual, encoding="utf-8")
    assert expected_path.exists(), f"missing {expected_path.name}; run with ROOTRANK_UPDATE_GOLDEN=1"
    assert actual == expected_path.read_text(encoding="utf-8")
    if case.parent.name != "clean":
        near_misses = "near miss" in case.read_text(encoding="utf-8").lower() or case.stem.startswith("near_miss")
        assert case.parent.name in actual or near_misses, \
            f"{_id(case)} never reports its folder's rule and does not say it holds near misses"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fix(case: Path) -> None:
    source = case.read_text(encoding="utf-8")
    fixed = fix_all(source, _name(case), unsafe=False)
    golden = _fixed_path(case)
    if UPDATE:
        if fixed != source:
            golden.write_text(fixed, encoding="utf-8")
        elif golden.exists():
            golden.unlink()
    if golden.exists():
        assert fixed == golden.read_text(encoding="utf-8")
    else:
        assert fixed == source, f"--fix changes {_id(case)}; run with ROOTRANK_UPDATE_GOLDEN=1"


@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
@pytest.mark.parametrize("case", CASES, ids=_id)
def test_fix_is_idempotent_and_parses(case: Path, unsafe: bool) -> None:
    source = case.read_text(encoding="utf-8")
    once = fix_all(source, _name(case), unsafe)
    parses(once, case.suffix)
    assert fix_source(once, _name(case), unsafe=unsafe)[0] == once
    assert not [f for f in check_source(once, _name(case)) if f.fix and
                (f.fix.applicability is Applicability.SAFE or unsafe) and
                any(x.applicability is Applicability.SAFE for x in f.fixes)], "a safe fix survived --fix"


@pytest.mark.parametrize("case", CASES, ids=_id)
def test_each_fix_alone_parses_and_stays_in_range(case: Path) -> None:
    source = case.read_text(encoding="utf-8")
    if case.suffix == ".ipynb":
        for finding in check_source(source, _name(case)):
            for fix in finding.fixes:
                alone = dataclasses.replace(finding, fixes=(Fix(fix.title, Applicability.SAFE, fix.edits),))
                parses(apply_to_cells(source, [alone], lambda cell, found: apply_fixes(cell, found)), case.suffix)
        return
    locator = Locator(source)
    for finding in check_source(source, _name(case)):
        for fix in finding.fixes:
            result = _apply_one(source, fix)
            parses(result, case.suffix)
            for edit in fix.edits:
                start = locator.offset(edit.line, edit.column)
                end = locator.offset(edit.end_line, edit.end_column)
                assert start <= end
                # Nothing before the edit moves, and everything after it is the original tail.
                assert result.startswith(source[:start]) or len(fix.edits) > 1
                assert result.endswith(source[end:]) or len(fix.edits) > 1


def _apply_one(source: str, fix: Fix) -> str:
    finding = Finding("x", DEFAULT_SEVERITY["checkpoint.partial-coverage"], "-", 1, 1, 1, 1, "",
                      (Fix(fix.title, Applicability.SAFE, fix.edits),))
    return apply_fixes(source, [finding])


def update() -> None:
    global UPDATE
    UPDATE = True
    for case in CASES:
        test_findings(case)
        test_fix(case)


if __name__ == "__main__":
    if "--update-golden" in sys.argv:
        update()
