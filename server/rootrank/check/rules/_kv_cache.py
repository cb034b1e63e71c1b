"""checkpoint.recompute-mismatch, second cause: torch's layer checkpoint wrapper on a causal LM whose KV cache is on.

`apply_activation_checkpointing(model, ...)` / `checkpoint_wrapper(layer)` recompute each wrapped decoder layer in
backward outside transformers' own checkpointing (which turns the cache off: its `GradientCheckpointingLayer`). With
`use_cache=True` (a keyword of the model call, `from_pretrained` or the config, `model.config.use_cache = True`, or
just the causal-LM configs' default) the recomputation writes the KV cache a second time, and what the backward then
does is the facts table's `transformers.checkpoint-wrapper-kv-cache`: it raises on every attention up to a release,
and after it still raises with eager attention or a padding mask. Reported:

- an explicit `use_cache=True` in the code that trains (as checkpoint.hf-use-cache decides it: same function, not
  under `no_grad`, not followed by `.eval()`), at that keyword, as an error where the version always fails and a
  warning where it depends on the attention and the padding; the fix writes `False`: safe where the version always
  fails and the file does not generate (the run could not get past its first backward), unsafe otherwise (the call
  then returns no cache);
- a causal LM built in the file with the cache never turned off anywhere in it (no `use_cache` other than `True`),
  at the wrapper call, as a warning: the config's default applies unless something the file does not show (a
  config file, `**kwargs`) turns it off.

Nothing is reported when the file also turns on transformers' own checkpointing (the enable call or the training
arguments' flag): transformers then drops the cache inside each layer.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation
from rootrank.check.rules.hf_use_cache import checkpointing_on, explicit_use_cache_true, is_true
from rootrank.check.semantic import CallSite, Semantic, keyword
from rootrank.model import Applicability, Severity
from rootrank.stack import facts

TOPIC = "transformers.checkpoint-wrapper-kv-cache"
WRAPPERS = ("apply_activation_checkpointing", "checkpoint_wrapper")
# Model classes with a KV cache: transformers' causal-LM heads (and PEFT's wrappers of them).
_CAUSAL_LM = ("ForCausalLM", "LMHeadModel")


def kv_cache(semantic: Semantic) -> Iterator[Violation]:
    wrappers = [site for site in semantic.checkpoints if site.api in WRAPPERS]
    if not wrappers or checkpointing_on(semantic) is not None:
        return
    answer = semantic.fact(TOPIC)
    wrapper = wrappers[0].call
    where = f"line {wrapper.lineno}"
    explicit = list(explicit_use_cache_true(semantic, wrapper))
    for node, replace in explicit:
        if answer.is_("fails"):
            consequence = ("the recomputation in backward writes the KV cache a second time and the backward raises "
                           "(`CheckpointError: ... Recomputed values for the following tensors have different "
                           "metadata` or `RuntimeError: The size of tensor a ... must match`, depending on the "
                           "attention and the padding)")
            severity = None
        elif answer.is_("sdpa-unpadded"):
            consequence = ("the recomputation in backward writes the KV cache a second time: the backward raises "
                           "`RuntimeError: The size of tensor a ... must match` with eager attention or a padding "
                           "mask, and only runs with SDPA attention on unpadded batches")
            severity = Severity.WARNING
        else:
            consequence = ("the recomputation in backward writes the KV cache a second time, and the backward raises "
                           f"on {facts.topic(TOPIC).versions_where('fails')} ({answer.assumed})")
            severity = Severity.WARNING
        message = (f"`use_cache=True` on a model whose layers torch's checkpoint wrapper recomputes ({where}): "
                   f"{consequence}; set `use_cache=False` for training")
        # Safe only where the run cannot get past its first backward anyway and nothing generates with the model;
        # where it may run, `False` changes what the call returns (no cache).
        safe = answer.is_("fails") and not any(semantic.method_calls("generate"))
        fix = edits.fix("Set `use_cache=False`", Applicability.SAFE if safe else Applicability.UNSAFE,
                        edits.replace(semantic, replace, "False"))
        yield Violation(node, message, edits.fixes(fix), (answer.assumed,) if answer.known else (), None, severity)
    if explicit or _cache_turned_off(semantic):
        return
    model = next((site for site in semantic.calls if _is_causal_lm(semantic, site)), None)
    if model is None:
        return
    applies = (f"the backward raises on {facts.topic(TOPIC).versions_where('fails')}, and on later releases with "
               "eager attention or a padding mask")
    if answer.is_("fails"):
        applies = "the backward raises"
    elif answer.is_("sdpa-unpadded"):
        applies = "the backward raises with eager attention or a padding mask (it runs only with SDPA on unpadded batches)"
    yield Violation(wrapper.func, (
        f"torch's checkpoint wrapper on the causal LM built at line {model.node.lineno}, whose KV cache stays on (the "
        f"config's default `use_cache=True`; nothing in this file turns it off): the recomputation in backward writes "
        f"the cache a second time and {applies}; load or configure the model with `use_cache=False` for training"),
        (), (answer.assumed,) if answer.known else (), None, Severity.WARNING)


def _cache_turned_off(semantic: Semantic) -> bool:
    """Whether the file may turn the cache off somewhere: a `use_cache` keyword or attribute set to anything but
    the constant `True`."""
    for site in semantic.calls:
        found = keyword(site.node, "use_cache")
        if found is not None and not is_true(found.value):
            return True
    return any(any(isinstance(t, ast.Attribute) and t.attr == "use_cache" for t in assign.targets)
               and not is_true(assign.value)
               for assign in semantic.assigns)


def _is_causal_lm(semantic: Semantic, site: CallSite) -> bool:
    name = semantic.qualified(site.node.func) or ""
    parts = name.split(".")
    return parts[0] in ("transformers", "peft") and any(p.endswith(_CAUSAL_LM) for p in parts[1:])

