"""#22 items 13 and 14 on Python: `--unsafe-fixes` never writes code that does not compile and keeps the
call's comments and its arguments' own parentheses; `# noqa` is a comment only where `tokenize` says so.

The hostile inputs are generated here: checkpoint calls with `(yield x)` arguments, strings holding
commas, parentheses and `# noqa`, comments after every comma, multi-line strings and continuations.
"""

from __future__ import annotations

import ast
import io
import itertools
import random
import tokenize
from collections import Counter

import pytest

from rootrank.check import check_source, fix_source
from rootrank.check.noqa import Text, comments_at, insertion, scan
from rootrank.check.registry import RULES, Rule, Violation
from rootrank.check.source import Locator
from rootrank.model import Applicability, Edit, Fix, Severity

HEAD = "import torch\nfrom torch.utils.checkpoint import checkpoint\n\n\ndef step(block, x, y, make):\n"
RULE = "checkpoint.use-reentrant-explicit"

FUNCTIONS = ["block", "block.forward", "make()", "(lambda t: t)", "lambda t: t", "lambda t, s=(1, 2): t"]
ARGUMENTS = ["x", "(yield x)", "(x, y)", '"a, b) # noqa"', "[1, (2)]", "{'k': (y)}", "(x\n            )",
             "make(x, y)", "*x"]


def comments(source: str) -> Counter[str]:
    found: Counter[str] = Counter()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            found[token.string] += 1
    return found


def calls(seed: int, count: int) -> list[str]:
    """Generated `checkpoint(...)` calls under `torch.no_grad()` (whose unsafe fix calls the function
    directly), single-line and multi-line, with comments in every place one can go."""
    rng = random.Random(seed)
    out = []
    for _ in range(count):
        function = rng.choice(FUNCTIONS)
        arguments = rng.sample(ARGUMENTS, rng.randint(0, 3))
        if "*x" in arguments:
            arguments.remove("*x")
            arguments.append("*x")
        keywords = rng.sample(["use_reentrant=False", "preserve_rng_state=True", "scale=2"], rng.randint(0, 2))
        parts = [function, *arguments, *keywords]
        if rng.random() < 0.5:
            body = ", ".join(parts)
            text = f"checkpoint({body})"
            if rng.random() < 0.5:
                text += "  # trailing note"
        else:
            lines = []
            for i, part in enumerate(parts):
                note = f"  # note {i}" if rng.random() < 0.6 else ""
                comma = "," if i < len(parts) - 1 or rng.random() < 0.5 else ""
                lines.append(f"            {part}{comma}{note}")
            if rng.random() < 0.3:
                lines.insert(rng.randint(0, len(lines)), "            # a line of its own")
            text = "checkpoint(\n" + "\n".join(lines) + "\n        )"
        out.append(HEAD + "    with torch.no_grad():\n        out = " + text + "\n    return out\n")
    return out


def _parses(source: str) -> bool:
    try:
        compile(source, "g", "exec")
    except SyntaxError:
        return False
    return True


GENERATED = [c for c in calls(22, 300) if _parses(c)]


def test_unsafe_fixes_compile_keep_comments_and_parentheses() -> None:
    assert len(GENERATED) > 200
    changed = 0
    for source in GENERATED:
        fixed, _ = fix_source(source, "train.py", unsafe=True)
        compile(fixed, "train.py", "exec")  # raises if a fix wrote code that does not compile
        assert comments(fixed) >= comments(source), (source, fixed)
        assert fix_source(fixed, "train.py", unsafe=True)[0] == fixed
        if "out = checkpoint(" not in fixed:
            changed += 1
            if "(yield x)" in source:
                assert "(yield x)" in fixed  # the argument's own parentheses
    assert changed > 50  # the fix really ran on most of them


def test_yield_argument_keeps_its_parentheses() -> None:
    source = HEAD + "    with torch.no_grad():\n        out = checkpoint(block, (yield x), use_reentrant=False)\n"
    fixed, count = fix_source(source, "train.py", unsafe=True)
    assert count and "out = block((yield x))" in fixed
    compile(fixed, "train.py", "exec")


def test_a_pass_that_would_not_compile_is_not_written(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a rule's fix is, `--fix` re-compiles before writing: a rule whose fix breaks the code
    (here one registered for the test) loses that fix; the other fixes of the pass are still made."""
    def breaks(semantic: object) -> list[Violation]:
        tree = semantic.tree  # type: ignore[attr-defined]
        call = next(n for n in ast.walk(tree) if isinstance(n, ast.Call) and getattr(n.func, "id", "") == "checkpoint")
        end = Edit(call.end_lineno, call.end_col_offset + 1, call.end_lineno, call.end_col_offset + 1, " +")
        return [Violation(call, "test", (Fix("break it", Applicability.SAFE, (end,)),))]

    monkeypatch.setitem(RULES, "checkpoint.zz-breaks", Rule("checkpoint.zz-breaks", breaks, Severity.WARNING))
    source = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, x)\n"
    fixed, _ = fix_source(source, "train.py")
    compile(fixed, "train.py", "exec")
    assert "use_reentrant=True" in fixed and " +" not in fixed


# ---------------------------------------------------------------------- item 14: noqa


MISSING = "from torch.utils.checkpoint import checkpoint\ny = checkpoint(f, {arg})\n"
STRINGS = ['"# noqa"', "'# noqa: checkpoint'", 'f"{x} # noqa"', '"""\n# noqa\n"""', "'''a\n  # noqa: " + RULE + "\n'''",
           'b"# noqa"', r'"\" # noqa"', "rf'''\n# noqa'''"]


@pytest.mark.parametrize("arg", STRINGS)
def test_a_noqa_inside_a_string_silences_nothing(arg: str) -> None:
    source = MISSING.format(arg=arg)
    assert [f.rule for f in check_source(source, "train.py")] == [RULE]


@pytest.mark.parametrize("arg", STRINGS)
def test_ignore_on_this_line_never_lands_in_a_string(arg: str) -> None:
    """The inserted comment is a comment (tokenize), the code is unchanged (same AST), and the finding is
    silenced; applying it through the language server's edit gives the same text."""
    from rootrank.lsp.convert import Lines
    from rootrank.lsp.noqa import noqa_edit

    source = MISSING.format(arg=arg)
    [finding] = check_source(source, "train.py")
    edit = insertion(Text.of(source), "python", finding.line, finding.column, finding.rule)
    assert edit is not None
    fixed = _apply(source, edit)
    assert ast.dump(ast.parse(fixed)) == ast.dump(ast.parse(source))
    assert comments(fixed)[f"# noqa: {RULE}"] == 1
    assert check_source(fixed, "train.py") == []
    lines = Lines(source)
    lsp = noqa_edit(lines, finding.line - 1, finding.rule, "python", finding.column)
    assert lsp is not None
    start = Locator(source).offset(lsp.range.start.line + 1, lines.column(lsp.range.start) + 1)
    end = Locator(source).offset(lsp.range.end.line + 1, lines.column(lsp.range.end) + 1)
    assert source[:start] + lsp.new_text + source[end:] == fixed


def _apply(source: str, edit: Edit) -> str:
    locator = Locator(source)
    start, end = locator.offset(edit.line, edit.column), locator.offset(edit.end_line, edit.end_column)
    return source[:start] + edit.text + source[end:]


def test_generated_lines_take_the_noqa_as_a_comment() -> None:
    """At every place a finding can start (each expression of generated statements: strings with `#`,
    multi-line strings, continuations, brackets over lines, comments already there) the comment is read
    as tokenize reads the whole file, and the inserted one is a comment: the code never changes."""
    pieces = ['"#"', "'# x'", '"""a\n#b\nc"""', "(1 +\n 2)", "1 + \\\n 2", "[\n  '#',\n]", 'f"{1:#x}"', "x  # old",
              'f(\n  """\n  # noqa\n  """, y)']
    for first, second in itertools.product(pieces, repeat=2):
        source = f"a = {first}\nb = {second}\n"
        if not _parses(source):
            continue
        tree = ast.parse(source)
        whole = scan(source, "python")
        for node in ast.walk(tree):
            if not isinstance(node, ast.expr):
                continue
            line, column = node.lineno, Locator(source).column(node.lineno, node.col_offset)
            local = comments_at(Text.of(source), "python", line, column)
            assert local.home(line) == whole.home(line), (source, line, column)
            edit = insertion(Text.of(source), "python", line, column, "checkpoint.x")
            if edit is None:
                continue
            fixed = _apply(source, edit)
            assert ast.dump(ast.parse(fixed)) == ast.dump(tree), (source, line, fixed)
            found = comments_at(Text.of(fixed), "python", line, column).noqa(line)
            assert found is not None and "checkpoint.x" in found[1].group(0), (source, line, fixed)


def test_yaml_and_shell_comments_come_from_their_own_lexers() -> None:
    text = 'trainer: {output_dir: "a # noqa", gradient_checkpointing: true}\n'
    assert [f.rule for f in check_source(text, "args.yaml")] == [RULE]
    silenced = text.rstrip("\n") + "  # noqa: " + RULE + "\n"
    assert check_source(silenced, "args.yaml") == []
    edit = insertion(Text.of(text), "yaml", 1, 1, RULE)
    assert edit is not None and check_source(_apply(text, edit), "args.yaml") == []
    block = "note: |\n  # noqa\ngradient_checkpointing: true\noutput_dir: o\n"
    assert scan(block, "yaml").noqa(2) is None  # inside a block scalar
    shell = 'echo "a # b" \'# c\' # real\ncmd --x \\\n  --y # end\n'
    comments_of = scan(shell, "shell")
    assert comments_of.by_line[1].text == "# real" and comments_of.by_line[3].text == "# end"
    assert comments_of.home(2) is None  # a continued line: a comment there would end the command
