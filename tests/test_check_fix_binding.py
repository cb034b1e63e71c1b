"""Every fix, on every Python fixture, produces code that runs as far as a file can tell: it parses, the
calls it edited still bind their arguments against the real signatures of the installed torch (and
transformers, where installed), applying it twice changes nothing, and no error finding is left on a
line it edited.

`TypeError: got multiple values for argument` is what a careless keyword insertion causes at run time;
`py_compile` cannot see it, `inspect.signature(...).bind` can.
"""

from __future__ import annotations

import ast
import functools
import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

from rootrank.check.fixes import apply_fixes
from rootrank.model import Severity
from tests.heavy import require_module
from tests.test_check_fixtures import CASES, _id, _name, case_versions, check, fix_all

PYTHON_CASES = [c for c in CASES if c.suffix == ".py"]


_SIGNATURES_PROBE = r"""
import inspect, json
import torch.utils.checkpoint as tuc
from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as cw

functions = {"checkpoint": tuc.checkpoint, "checkpoint_sequential": tuc.checkpoint_sequential,
             "checkpoint_wrapper": cw.checkpoint_wrapper, "apply_activation_checkpointing": cw.apply_activation_checkpointing}
try:
    from transformers import PreTrainedModel
    functions["gradient_checkpointing_enable"] = PreTrainedModel.gradient_checkpointing_enable
except ImportError:
    pass
out = {}
for name, function in functions.items():
    params = list(inspect.signature(function).parameters.values())
    if name == "gradient_checkpointing_enable":
        params = params[1:]  # bound as a method: no `self`
    out[name] = [[p.name, p.kind.name, p.default is not inspect.Parameter.empty] for p in params]
import torch
out["__torch__"] = torch.__version__
print(json.dumps(out))
"""


@functools.cache
def _installed_torch() -> str:
    require_module("torch")
    run = subprocess.run([sys.executable, "-c", _SIGNATURES_PROBE], capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stderr
    return str(json.loads(run.stdout.strip().splitlines()[-1])["__torch__"])


def _written_for_installed_torch(name: str) -> bool:
    """Whether the case was written for the installed torch's release (a 2.14 case uses 2.14's signatures)."""
    def release(version: str) -> tuple[str, ...]:
        return tuple(version.split("+")[0].split(".")[:2])
    return release(case_versions(name).get("torch", _installed_torch())) == release(_installed_torch())


@functools.cache
def _signatures() -> dict[str, inspect.Signature]:
    """The real signatures of the installed torch (and transformers), read in a child process so the test
    runner never imports torch."""
    require_module("torch")
    run = subprocess.run([sys.executable, "-c", _SIGNATURES_PROBE], capture_output=True, text=True, timeout=300,
                         check=False)
    assert run.returncode == 0, run.stderr
    found = json.loads(run.stdout.strip().splitlines()[-1])
    found.pop("__torch__")
    return {name: inspect.Signature([inspect.Parameter(p, getattr(inspect.Parameter, kind),
                                                       default=None if has_default else inspect.Parameter.empty)
                                     for p, kind, has_default in params])
            for name, params in found.items()}


def _edited_lines(before: str, after: str) -> set[int]:
    import difflib

    lines: set[int] = set()
    matcher = difflib.SequenceMatcher(a=before.splitlines(), b=after.splitlines(), autojunk=False)
    for tag, _, _, j1, j2 in matcher.get_opcodes():
        if tag != "equal":
            lines.update(range(j1 + 1, max(j2, j1 + 1) + 1))
    return lines


def _unbindable(tree: ast.Module, lines: set[int], signatures: dict[str, inspect.Signature]) -> list[str]:
    problems = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not lines & set(range(node.lineno, (node.end_lineno or node.lineno) + 1)):
            continue
        func = node.func
        name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        signature = signatures.get(name)
        if signature is None or any(isinstance(a, ast.Starred) for a in node.args) \
                or any(k.arg is None for k in node.keywords):
            continue
        try:
            signature.bind(*[object()] * len(node.args), **{str(k.arg): object() for k in node.keywords})
        except TypeError as error:
            problems.append(f"line {node.lineno}: {ast.unparse(node)}: {error}")
    return problems


@pytest.mark.parametrize("case", PYTHON_CASES, ids=_id)
@pytest.mark.parametrize("unsafe", [False, True], ids=["safe", "unsafe"])
def test_fixed_code_parses_binds_and_is_final(case: Path, unsafe: bool) -> None:
    signatures = _signatures()
    source = case.read_text(encoding="utf-8")
    fixed = fix_all(source, _name(case), unsafe=unsafe)
    if fixed == source:
        return
    tree = ast.parse(fixed)
    edited = _edited_lines(source, fixed)
    if _written_for_installed_torch(_name(case)):
        assert _unbindable(tree, edited, signatures) == []
    after = check(fixed, _name(case))  # with the versions the case was written for
    assert apply_fixes(fixed, after, unsafe=unsafe) == fixed
    left = [f"{f.line}: {f.rule}" for f in after if f.severity is Severity.ERROR and f.line in edited]
    assert left == [], f"an error is still reported on a line the fix edited: {left}"


def test_the_binding_check_sees_a_keyword_passed_twice() -> None:
    signatures = _signatures()
    tree = ast.parse("checkpoint_sequential(seq, 2, x, False, use_reentrant=True)\n")
    assert _unbindable(tree, {1}, signatures)
    assert not _unbindable(ast.parse("checkpoint_sequential(seq, 2, x, use_reentrant=True)\n"), {1}, signatures)
