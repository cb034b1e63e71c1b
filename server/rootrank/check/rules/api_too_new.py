"""checkpoint.api-too-new: checkpointing code that uses an API the installed library does not have yet.

## What it does
Flags, for the versions the file runs with (`--python`, the virtual environment, a `.venv`):
- transformers' `activation_checkpointing_enable`/`_disable` calls and `TrainingArguments`-like
  `activation_checkpointing=`/`activation_checkpointing_kwargs=` keywords on a transformers without them;
- the enable call's `every_n_layers=` / `offload=` on a transformers without them;
- torch's curried `checkpoint(use_reentrant=False)(fn)` / `@checkpoint(...)` on a torch without it.
Which version has what is the facts table's (`transformers.activation-checkpointing-names`,
`transformers.every-n-layers`, `transformers.offload`, `torch.curried-checkpoint`). Only a version that
was found and read counts: with no version found, the code may well run where it was written for, so
nothing is reported.

## Why is this bad?
The first call raises: `AttributeError: '...' object has no attribute 'activation_checkpointing_enable'`,
`TypeError: ...__init__() got an unexpected keyword argument 'activation_checkpointing'`,
`TypeError: checkpoint() missing 1 required positional argument: 'function'`.

## Fix safety
Display-only: whether to write the old API or upgrade is the user's call, and the old transformers names
do not carry the new release's defaults (see the entry).
"""

from __future__ import annotations

from collections.abc import Iterator

from rootrank.check import hf
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import Semantic
from rootrank.model import Severity
from rootrank.stack import facts

RULE = "checkpoint.api-too-new"
NAMES = "transformers.activation-checkpointing-names"
ENABLE_KEYWORDS = {"every_n_layers": "transformers.every-n-layers", "offload": "transformers.offload"}
CURRIED = "torch.curried-checkpoint"
HOOKS, HOOKS_TOPIC = "respect_saved_tensors_hooks", "torch.respect-saved-tensors-hooks"


@rule(RULE, Severity.ERROR, moots_fixes=True)
def api_too_new(semantic: Semantic) -> Iterator[Violation]:
    yield from _hf_names(semantic)
    yield from _enable_keywords(semantic)
    yield from _torch_hooks_keyword(semantic)
    yield from _torch_curried(semantic)


def _hf_names(semantic: Semantic) -> Iterator[Violation]:
    names = semantic.fact(NAMES)
    if not names.is_(False):
        return
    since = facts.topic(NAMES).since(True)
    for method in (*hf.ENABLE, *hf.DISABLE):
        if not method.startswith(hf.NEW):
            continue
        for called in semantic.method_calls(method):
            yield Violation(called.node.func, f"`{method}` does not exist on {names.assumed}: it raises "
                            f"`AttributeError: '<model class>' object has no attribute '{method}'` "
                            f"(new in {since}); call `{method.replace(hf.NEW, hf.OLD)}` or upgrade",
                            assumes=(names.assumed,))
    for args in semantic.training_arguments():
        callee = semantic.text(args.node.func).rsplit(".", 1)[-1]
        for keyword in args.node.keywords:
            if keyword.arg in (hf.NEW, hf.kwargs_name(hf.NEW)):
                yield Violation(keyword, f"`{callee}({keyword.arg}=...)` on {names.assumed}: it raises "
                                f"`TypeError: {callee}.__init__() got an unexpected keyword argument "
                                f"'{keyword.arg}'` (new in {since}); use "
                                f"`{keyword.arg.replace(hf.NEW, hf.OLD)}` or upgrade", assumes=(names.assumed,))


def _enable_keywords(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.checkpoints:
        if not hf.is_enable(site.api):
            continue
        for keyword in site.call.keywords:
            topic = ENABLE_KEYWORDS.get(keyword.arg or "")
            if topic is None:
                continue
            answer = semantic.fact(topic)
            if answer.is_(False):
                yield Violation(site.call.func, f"`{site.api}({keyword.arg}=...)` on {answer.assumed}: it raises "
                                f"`TypeError: ...{site.api}() got an unexpected keyword argument '{keyword.arg}'` "
                                f"(new in {facts.topic(topic).since(True)})", assumes=(answer.assumed,))


def _torch_hooks_keyword(semantic: Semantic) -> Iterator[Violation]:
    hooks = semantic.fact(HOOKS_TOPIC)
    if not hooks.known or hooks.value is not None:
        return
    for site in semantic.checkpoints:
        # The reentrant variant's error for it is checkpoint.reentrant-kwargs'.
        if site.api != "checkpoint" or site.reentrant is not False:
            continue
        for keyword in site.call.keywords:
            if keyword.arg == HOOKS:
                yield Violation(site.call.func, f"`{HOOKS}` is not a keyword of `checkpoint()` on {hooks.assumed}: the "
                                "non-reentrant checkpoint passes it on to the checkpointed function, which raises "
                                f"`TypeError: ...forward() got an unexpected keyword argument '{HOOKS}'` (new in "
                                f"{_since_own(facts.topic(HOOKS_TOPIC))}); drop it or upgrade",
                                assumes=(hooks.assumed,))


def _torch_curried(semantic: Semantic) -> Iterator[Violation]:
    curried = semantic.fact(CURRIED)
    if not curried.known or curried.value is True:
        return
    since = facts.topic(CURRIED).since(True)
    for site in semantic.checkpoints:
        if site.curried:
            yield Violation(site.call.func, f"curried `checkpoint(...)(fn)` on {curried.assumed}: it raises "
                            f"`TypeError: {curried.value}` (new in {since}); pass the function "
                            "first: `checkpoint(fn, *args, use_reentrant=...)`", assumes=(curried.assumed,))


def _since_own(topic: facts.Topic) -> str:
    """Where the keyword is checkpoint's own: the first row with a value (the reentrant variant's error)."""
    own = next((r.value for r in topic.rows if r.value is not None), None)
    return topic.since(own) if own is not None else f"no {topic.library} version read"
