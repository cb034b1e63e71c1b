"""Property tests: generated checkpoint calls (aliases, dotted names, multi-line, trailing commas,
comments) are found exactly when `use_reentrant` is missing, and every fix parses and is idempotent."""

from __future__ import annotations

import ast

from hypothesis import given, settings
from hypothesis import strategies as st

from rootrank.check import check_source
from rootrank.check.fixes import apply_fixes

RULE = "checkpoint.use-reentrant-explicit"
SPELLINGS = [
    ("from torch.utils.checkpoint import checkpoint", "checkpoint"),
    ("from torch.utils.checkpoint import checkpoint as ckpt", "ckpt"),
    ("import torch.utils.checkpoint as cp", "cp.checkpoint"),
    ("import torch", "torch.utils.checkpoint.checkpoint"),
    ("import torch.utils.checkpoint", "torch.utils.checkpoint.checkpoint"),
    ("from torch.utils import checkpoint as tuc", "tuc.checkpoint"),
    ("from torch.utils.checkpoint import checkpoint_sequential as seq", "seq"),
    ("import functools\nfrom torch.utils.checkpoint import checkpoint\n"
     "ck = functools.partial(checkpoint, preserve_rng_state=True)", "ck"),
]
ARGUMENTS = st.lists(st.sampled_from(["block", "x", "self.layers[i]", "*inputs", "mask", "preserve_rng_state=False",
                                      "debug=False", "lambda t: t.relu()", "f(x, y)", "'s,t'"]), max_size=4)


@st.composite
def calls(draw: st.DrawFn) -> tuple[str, bool]:
    imports, name = draw(st.sampled_from(SPELLINGS))
    arguments = draw(ARGUMENTS)
    arguments = sorted(arguments, key=lambda a: "=" in a)  # positional before keywords
    explicit = draw(st.sampled_from([None, "use_reentrant=True", "use_reentrant=False"]))
    if explicit:
        arguments.append(explicit)
    layout = draw(st.sampled_from(["flat", "lines", "comments"]))
    trailing = draw(st.booleans()) and bool(arguments) and not arguments[-1].startswith("*")
    if layout == "flat":
        body = ", ".join(arguments) + ("," if trailing else "")
    else:
        note = "  # why\n" if layout == "comments" else "\n"
        body = "\n" + "".join(f"    {a},{note}" if (i < len(arguments) - 1 or trailing) else f"    {a}{note}"
                              for i, a in enumerate(arguments))
    source = f"{imports}\n\n\ndef forward(x):\n    y = {name}({body})\n    return y\n"
    # checkpoint_sequential(functions, segments, input, use_reentrant): a fourth positional argument *is*
    # use_reentrant, and a `*args` among the first four may be.
    positional = [a for a in arguments if "=" not in a]
    bound = "checkpoint_sequential" in imports and (len(positional) >= 4 or any(a.startswith("*") for a in positional[:4]))
    return source, explicit is None and not bound


@settings(max_examples=300, deadline=None)
@given(calls())
def test_missing_use_reentrant_is_found_and_fixed(case: tuple[str, bool]) -> None:
    source, missing = case
    ast.parse(source)
    findings = [f for f in check_source(source, "gen.py") if f.rule == RULE]
    assert bool(findings) == missing, source
    for unsafe in (False, True):
        fixed = apply_fixes(source, findings, unsafe=unsafe)
        ast.parse(fixed)
        after = [f for f in check_source(fixed, "gen.py") if f.rule == RULE]
        assert not after, fixed
        assert apply_fixes(fixed, after, unsafe=unsafe) == fixed
        if missing:
            assert f"use_reentrant={not unsafe}" in fixed
            # Only the call changed: everything before it is untouched.
            assert fixed.split("    y = ")[0] == source.split("    y = ")[0]


@settings(max_examples=100, deadline=None)
@given(st.text(alphabet="checkpoint()[]{}:=,.\n '\"#\\", max_size=80))
def test_garbage_never_raises(text: str) -> None:
    check_source("from torch.utils.checkpoint import checkpoint\n" + text, "junk.py")
    check_source("gradient_checkpointing: " + text, "junk.yaml")
    check_source('{"gradient_checkpointing": ' + text, "junk.json")
    check_source("--recompute-num-layers " + text, "junk.sh")
