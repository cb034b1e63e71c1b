"""checkpoint.recompute-mismatch: `preserve_rng_state=False` on checkpointed code that draws dropout (and, in
_kv_cache.py, torch's checkpoint wrapper on a causal LM whose KV cache is on).

## What it does
Flags `checkpoint(..., preserve_rng_state=False)`, `checkpoint_sequential(...)` and
`checkpoint_wrapper(..., preserve_rng_state=False)` (also through a `functools.partial` preset, e.g.
`apply_activation_checkpointing(model, checkpoint_wrapper_fn=partial(checkpoint_wrapper,
preserve_rng_state=False))`) in a file that uses dropout: `nn.Dropout`/`F.dropout` and friends, or a
model/adapter config with a non-zero `*dropout` (`LoraConfig(lora_dropout=0.05)`, `attention_dropout`).

## Why is this bad?
With `preserve_rng_state=False` the recomputation in backward draws new random numbers: every dropout
inside the block gets a different mask than the forward used, so the gradients belong to another
network than the loss. Nothing fails: shapes and dtypes are the same, so even the non-reentrant
checkpoint's metadata check (`CheckpointError`) stays silent, and training quietly degrades.

## Fix safety
Removing `preserve_rng_state=False` (PyTorch's default is `True`) is safe: the forward computes exactly
what it computed before, and backward now recomputes the same masks. It costs stashing and restoring
the RNG state per checkpointed call. Where the dropout probability is zero in training the argument was
harmless, and `# noqa: checkpoint.recompute-mismatch` says so.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.rules._common import at_line
from rootrank.check.rules._kv_cache import kv_cache
from rootrank.check.semantic import CHECKPOINT, CHECKPOINT_SEQUENTIAL, CHECKPOINT_WRAPPER, UNKNOWN, Semantic
from rootrank.model import Applicability, Severity

RULE = "checkpoint.recompute-mismatch"
_DROPOUT_CALLS = ("Dropout", "Dropout1d", "Dropout2d", "Dropout3d", "AlphaDropout", "FeatureAlphaDropout",
                  "dropout", "dropout1d", "dropout2d", "dropout3d", "alpha_dropout", "feature_alpha_dropout")
_TARGETS = (CHECKPOINT, CHECKPOINT_SEQUENTIAL, CHECKPOINT_WRAPPER)


@rule(RULE, Severity.ERROR)
def recompute_mismatch(semantic: Semantic) -> Iterator[Violation]:
    yield from recompute_rng(semantic)
    yield from kv_cache(semantic)  # torch's checkpoint wrapper on a causal LM with its KV cache on (_kv_cache.py)


def recompute_rng(semantic: Semantic) -> Iterator[Violation]:
    offending = list(_rng_off(semantic))
    if not offending:
        return
    dropout = _dropout(semantic)
    if dropout is None:
        return
    for call, flag in offending:
        message = ("`preserve_rng_state=False` on checkpointed code in a file that uses dropout "
                   f"({at_line(dropout)}): the recomputation in backward draws different dropout masks than the "
                   "forward, so the gradients are silently wrong (no error is raised); pass `preserve_rng_state=True` (the default, "
                   "which replays the forward's random numbers)")
        fix = None
        if flag in call.keywords:
            fix = edits.fix("Preserve the RNG state for the recomputation (`preserve_rng_state=True`, the default)",
                            Applicability.SAFE, edits.replace(semantic, flag.value, "True"))
        yield Violation(flag if flag in call.keywords else call.func, message, edits.fixes(fix))


def _rng_off(semantic: Semantic) -> Iterator[tuple[ast.Call, ast.keyword]]:
    """Checkpoint calls (or partial presets of them) that pass `preserve_rng_state=False`."""
    for site in semantic.calls:
        call = site.node
        name, presets = semantic.resolve_call(call)
        if name == "functools.partial" and call.args and semantic.qualified(call.args[0]) in _TARGETS:
            found = next((k for k in call.keywords if k.arg == "preserve_rng_state"), None)
            if found is not None and semantic.literal(found.value, site.frame) is False:
                yield call, found
            continue
        if name not in _TARGETS:
            continue
        keywords = (*call.keywords, *presets)
        found = next((k for k in keywords if k.arg == "preserve_rng_state"), None)
        if found is not None and found in call.keywords and semantic.literal(found.value, site.frame) is False:
            yield call, found


def _dropout(semantic: Semantic) -> ast.AST | None:
    """The first place the file makes dropout happen (a layer, a functional call, a non-zero config value)."""
    for site in semantic.calls:
        func = site.node.func
        last = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
        qualified = semantic.qualified(func) or ""
        if last in _DROPOUT_CALLS and qualified.startswith("torch."):
            return site.node
        for keyword in site.node.keywords:
            if keyword.arg and keyword.arg.endswith("dropout"):
                value = semantic.literal(keyword.value, site.frame)
                if value is not UNKNOWN and isinstance(value, (int, float)) and not isinstance(value, bool) \
                        and value > 0:
                    return keyword
    return None
