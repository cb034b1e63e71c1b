"""Fix-all proves its fixes together (check.fix_together), in `rootrank check --fix` and in the language
server's `source.fixAll.rootrank`: each fix is right alone, and two of them can still be wrong side by side.

The conflicts come from two test rules (tests/lsp/patched_server.py `conflicting_rules`) beside the real
`checkpoint.use-reentrant-explicit`: one whose fix passes `use_reentrant` a second time on the same call (a
SyntaxError only in combination; the edits touch different text, so no overlap check sees it), one whose
fix leaves its finding in place. The calls are generated: many per file, formatted several ways.
"""

from __future__ import annotations

import ast
import dataclasses
import random
from pathlib import Path

import pytest

from rootrank.check import check_source, fix_source, fix_together
from rootrank.check.fixes import apply_fixes, choose
from rootrank.check.registry import RULES
from tests.lsp.patched_server import INEFFECTIVE, PINS, conflicting_rules

REAL = "checkpoint.use-reentrant-explicit"
HEAD = "import torch\nfrom torch.utils.checkpoint import checkpoint\n\n\ndef step(blocks, x, y, z):\n"


def generated(seed: int, count: int) -> str:
    """`count` checkpoint calls with two to three arguments, single-line, split over lines, or nested."""
    rng = random.Random(seed)
    lines = []
    for number in range(count):
        function = rng.choice(["blocks[0]", "blocks.layer", "(lambda t, u=None: t)", "getattr(blocks, 'f')"])
        arguments = rng.sample(["x", "y", "z", "(x + y)", "[x, y][0]", "x * 2"], rng.randint(1, 2))
        shape = rng.random()
        if shape < 0.4:
            call = f"checkpoint({function}, {', '.join(arguments)})"
        elif shape < 0.8:
            call = "checkpoint(\n        " + ",\n        ".join([function, *arguments]) + ",\n    )"
        else:
            call = f"torch.relu(checkpoint({function}, {', '.join(arguments)}))"
        lines.append(f"    out{number} = {call}  # call {number}")
    return HEAD + "\n".join(lines) + "\n    return x\n"


@pytest.fixture
def conflicting(monkeypatch: pytest.MonkeyPatch) -> None:
    for rule_id, rule in conflicting_rules().items():
        monkeypatch.setitem(RULES, rule_id, rule)


def _rules(text: str) -> list[str]:
    return sorted(f.rule for f in check_source(text, "train.py"))


def test_the_test_rules_conflict_only_together(conflicting: None) -> None:
    """The premise: each fix alone compiles and (but INEFFECTIVE's) removes its finding; all of them
    applied at once, as fix-all did before it proved them together, do not compile."""
    source = HEAD + "    return checkpoint(blocks, x)\n"
    findings = check_source(source, "train.py")
    assert sorted(f.rule for f in findings) == [REAL, INEFFECTIVE, PINS]
    for finding in findings:
        alone = apply_fixes(source, [finding])
        compile(alone, "train.py", "exec")
        assert (finding.rule in _rules(alone)) == (finding.rule == INEFFECTIVE), (finding.rule, alone)
    with pytest.raises(SyntaxError, match="keyword argument repeated"):
        compile(apply_fixes(source, findings), "train.py", "exec")


@pytest.mark.parametrize("seed", range(4))
def test_check_fix_keeps_the_fixes_that_hold_together(conflicting: None, seed: int) -> None:
    source = generated(seed, 30)
    calls = source.count("checkpoint(")
    fixed, count = fix_source(source, "train.py")
    compile(fixed, "train.py", "exec")  # never a file that does not compile
    tree = ast.parse(fixed)
    keywords = [k.arg for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "checkpoint"
                for k in n.keywords]
    # every call got exactly one use_reentrant, the real rule's (first in source order at each call)
    assert keywords == ["use_reentrant"] * calls, keywords
    assert fixed.count("use_reentrant=True") == calls and "use_reentrant=False" not in fixed
    assert REAL not in _rules(fixed) and PINS not in _rules(fixed)
    assert "(x + y, use_reentrant" not in fixed  # the real fix lands after an argument's own parentheses
    assert fixed.count("(") - source.count("(") == 0  # INEFFECTIVE's fix (parentheses) is never made
    assert count == calls
    assert [line.split("#")[1] for line in fixed.splitlines() if "# call" in line] == \
        [line.split("#")[1] for line in source.splitlines() if "# call" in line]


def test_one_pass_tries_halves_within_its_budget(conflicting: None) -> None:
    """`fix_together` alone: all together fail, halves are tried; the kept fixes hold together; a budget
    of re-checks too small for every call leaves the rest for the next pass, never a broken text."""
    source = generated(7, 16)
    findings = [f for f in check_source(source, "train.py") if choose(f, unsafe=False) is not None]
    rechecks: list[str] = []

    def recheck(text: str) -> list:
        rechecks.append(text)
        return check_source(text, "train.py")

    text, fixed, after = fix_together(source, "train.py", findings, recheck)
    compile(text, "train.py", "exec")
    assert {f.rule for f in fixed} == {REAL} and len(fixed) == 16
    assert after == check_source(text, "train.py")
    rechecks.clear()
    text, fixed, _ = fix_together(source, "train.py", findings, recheck, max_checks=5)
    compile(text, "train.py", "exec")
    assert len(rechecks) <= 5 and 0 < len(fixed) < 16 and {f.rule for f in fixed} == {REAL}


def test_a_file_that_did_not_compile_still_gets_fixes_that_remove_their_findings(conflicting: None,
                                                                                tmp_path: Path) -> None:
    """Compiling is asked only of text that compiled; the findings must still go."""
    source = HEAD + "    y = checkpoint(blocks, x)\n    return (\n"  # unclosed: a syntax error at the end
    fixed, _ = fix_source(source, "train.py")
    assert fixed == source or "use_reentrant" in fixed


@pytest.mark.parametrize("last", ["(x + y)", "((x) )", "(x\n    )", "(\n    x  # note\n)", "(yield x)", "[(x)]"])
def test_the_keyword_lands_after_the_last_arguments_own_parentheses(last: str) -> None:
    """Each fix of the real rule alone (the quick fix an editor applies) compiles: an argument's node ends
    inside its parentheses, and the keyword used to be inserted there (`(x + y, use_reentrant=True)`)."""
    source = HEAD + f"    return checkpoint(blocks, {last})\n"
    [finding] = [f for f in check_source(source, "train.py") if f.rule == REAL]
    for fix in finding.fixes:
        fixed = apply_fixes(source, [dataclasses.replace(finding, fixes=(fix,))], unsafe=True)
        compile(fixed, "train.py", "exec")
        assert REAL not in _rules(fixed), (fix.title, fixed)
