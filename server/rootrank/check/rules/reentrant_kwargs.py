"""checkpoint.reentrant-kwargs: a reentrant checkpoint passing keyword arguments to the function.

## What it does
Flags reentrant `checkpoint(fn, x, mask=m)` calls: keywords other than checkpoint's own
(`use_reentrant`, `preserve_rng_state`, `context_fn`, `determinism_check`, `debug`, `early_stop`, and
`respect_saved_tensors_hooks` where the installed torch has it: the facts table's
`torch.respect-saved-tensors-hooks`).

## Why is this bad?
The reentrant implementation only forwards positional arguments and raises
`ValueError: Unexpected keyword arguments: mask` at the first forward. `respect_saved_tensors_hooks` is
the function's keyword on a torch without it (the same error); on one with it the reentrant checkpoint
rejects it with its own `ValueError` (only supported when `use_reentrant=False`).

Hugging Face's kwargs dict (`gradient_checkpointing_kwargs=` / `activation_checkpointing_kwargs=` of the
enable call, TrainingArguments and TRL's configs) is handed to torch's checkpoint as is, apart from
`every_n_layers`/`offload` (transformers' own keys). A dict without `use_reentrant` is not transformers'
default: torch's default (reentrant) applies, so any other key, such as TRL's `selective` copied into a plain
Trainer or enable call, is a keyword of the checkpointed layer and raises the same `ValueError`. TRL's
`SFTTrainer` takes `selective` out itself where TRL has it (`trl.selective`) and then runs non-reentrant
(its SAC wrapper sets `use_reentrant=False`), but raises its own `ValueError` when the dict says
`use_reentrant=True`.

DeepSpeed's `deepspeed.checkpointing.checkpoint` (reentrant) takes keyword tensors only from the release the
facts table names (`deepspeed.checkpoint-kwargs`); before, a keyword is a `TypeError`.

## Fix safety
`use_reentrant=False` is unsafe (recomputation semantics change); the non-reentrant variant forwards
keyword arguments. Not offered for `respect_saved_tensors_hooks` on a torch without it: the
non-reentrant variant would pass it to the function, which fails as well. None for a Hugging Face kwargs
dict: non-reentrant would hand the key to the layer's `forward`, where it has no effect (`selective` does
nothing outside TRL's `SFTTrainer`); the message says to take the key out.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits, hf
from rootrank.check.registry import Violation, rule
from rootrank.check.rules.trl_peft_zero3 import checkpointing_on
from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, SFT_CONFIGS, UNKNOWN, Semantic
from rootrank.model import Severity
from rootrank.stack import facts

RULE = "checkpoint.reentrant-kwargs"
HOOKS = "respect_saved_tensors_hooks"
HOOKS_TOPIC = "torch.respect-saved-tensors-hooks"
SELECTIVE, SELECTIVE_TOPIC = "selective", "trl.selective"
# TRL's own text (trl/trainer/sft_trainer.py:1091-1094, trl 1.16.0 wheel).
TRL_SELECTIVE_REENTRANT = ("`gradient_checkpointing_kwargs={'selective': True}` requires non-reentrant gradient "
                           "checkpointing. Set `use_reentrant` to `False`, or leave it unset.")
# DeepSpeed's reentrant checkpoint under its import paths (`deepspeed.checkpointing` is the runtime module).
DEEPSPEED_CHECKPOINT = ("deepspeed.checkpointing.checkpoint",
                        "deepspeed.runtime.activation_checkpointing.checkpointing.checkpoint")
DEEPSPEED_TOPIC = "deepspeed.checkpoint-kwargs"
# Keys transformers itself takes out of the dict (on versions without them: checkpoint.api-too-new).
NOT_FORWARDED = CHECKPOINT_OWN_KEYWORDS | set(hf.OWN_KWARGS) | {HOOKS}


@rule(RULE, Severity.ERROR, caused_by="reentrant")
def reentrant_kwargs(semantic: Semantic) -> Iterator[Violation]:
    hooks = semantic.fact(HOOKS_TOPIC)
    yield from _hf_kwargs(semantic)
    yield from _deepspeed(semantic)
    for site in semantic.reentrant_sites():
        if site.api != "checkpoint":
            continue
        given = [k.arg for k in site.call.keywords if k.arg is not None and k.arg not in CHECKPOINT_OWN_KEYWORDS]
        fixes = edits.fixes(edits.use_non_reentrant(semantic, site.call, site.api))
        if HOOKS in given and hooks.known and hooks.value is not None:
            # torch's own keyword there, which the reentrant variant refuses with its own message.
            given.remove(HOOKS)
            yield Violation(site.call.func, f"reentrant `checkpoint()` with `{HOOKS}`: it raises "
                            f"`ValueError: {hooks.value}`; use `use_reentrant=False`", fixes, (hooks.assumed,))
        if not given:
            continue
        names = ", ".join(f"`{n}`" for n in given)
        message = (f"reentrant `checkpoint()` passes keyword argument(s) {names} to the checkpointed function: "
                   f"it raises `ValueError: Unexpected keyword arguments: {','.join(given)}`; use "
                   "`use_reentrant=False`, which forwards keyword arguments")
        if HOOKS not in given:
            yield Violation(site.call.func, message, fixes)
        elif hooks.known:
            # Non-reentrant would hand `respect_saved_tensors_hooks` to the function, which fails too.
            yield Violation(site.call.func, message, (), (hooks.assumed,))
        else:
            where = facts.topic(HOOKS_TOPIC).versions_where(None)
            yield Violation(site.call.func, f"{message} (`{HOOKS}` is the function's keyword on {where}; "
                            f"{hooks.assumed})", (), (hooks.assumed,), Severity.WARNING)


def _deepspeed(semantic: Semantic) -> Iterator[Violation]:
    """`deepspeed.checkpointing.checkpoint(fn, x, mask=m)`: keyword tensors are taken only where DeepSpeed's
    checkpoint has `**kwargs` (deepspeed.checkpoint-kwargs); before, the call fails in Python's own binding."""
    answer = semantic.fact(DEEPSPEED_TOPIC)
    if answer.is_(True):
        return
    for site in semantic.calls_to(*DEEPSPEED_CHECKPOINT):
        given = [k.arg for k in site.node.keywords if k.arg is not None]
        if not given:
            continue
        names = ", ".join(f"`{n}`" for n in given)
        message = (f"`deepspeed.checkpointing.checkpoint()` with keyword argument(s) {names}: "
                   "`checkpoint(function, *args)` takes positional arguments only and raises `TypeError: "
                   f"checkpoint() got an unexpected keyword argument '{given[0]}'`; pass them positionally (a "
                   f"closure for non-tensors), or use a DeepSpeed with keyword tensors "
                   f"({facts.topic(DEEPSPEED_TOPIC).versions_where(True)})")
        if answer.known:
            yield Violation(site.node.func, message, (), (answer.assumed,))
        else:
            yield Violation(site.node.func, f"{message} (applies to "
                            f"{facts.topic(DEEPSPEED_TOPIC).versions_where(False)}; {answer.assumed})", (),
                            (answer.assumed,), Severity.WARNING)


def _hf_kwargs(semantic: Semantic) -> Iterator[Violation]:
    """Keys of a Hugging Face kwargs dict that reach a reentrant checkpoint as the layer's keywords."""
    for site in semantic.checkpoints:
        if hf.is_enable(site.api) and site.keyword is not None and site.reentrant is True:
            yield from _forwarded(site.keyword, semantic.literal(site.keyword.value, site.frame))
    for args in semantic.training_arguments():
        kwargs = hf.kwargs(args.node)
        if kwargs is None or not checkpointing_on(semantic, args):
            continue
        value = semantic.literal(kwargs.value, args.frame)
        if not isinstance(value, dict) or UNKNOWN in value or UNKNOWN in value.values():
            continue
        mode = value.get("use_reentrant")
        name = semantic.qualified(args.node.func) or ""
        if name in SFT_CONFIGS and value.get(SELECTIVE):
            selective = semantic.fact(SELECTIVE_TOPIC)
            if mode is True and selective.is_(False) is not True:
                yield _trl_refuses(kwargs, selective)
                continue
            if selective.is_(True):
                continue  # taken out, and TRL's SAC wrapper sets `use_reentrant=False`
            if not selective.known and mode is None:
                yield from _forwarded(kwargs, value, selective, selective.topic.versions_where(False))
                continue
        if mode is False:
            continue
        if mode is None and name.startswith("trl."):
            # TRL >= 0.27 sets `use_reentrant=False` itself on transformers < 5 when the dict leaves it out.
            default = hf.default_reentrant(semantic.versions)
            trl = semantic.fact("trl.non-reentrant-on-transformers-4")
            if default.is_(True) and trl.is_(True):
                continue
            if default.is_(True) and not trl.known:
                yield from _forwarded(kwargs, value, trl, trl.topic.versions_where(False))
                continue
            if not default.known and trl.is_(False) is not True:
                yield from _forwarded(kwargs, value, default, default.topic.versions_where(False))
                continue
        yield from _forwarded(kwargs, value)


def _forwarded(kwargs: ast.keyword, value: object, assumed: facts.Answer | None = None,
               where: str = "") -> Iterator[Violation]:
    """The finding for the dict's keys that torch's checkpoint gets; `where` names the versions it applies to
    when `assumed` could not be read (then at most a warning)."""
    if not isinstance(value, dict):
        return
    keys = [k for k in value if isinstance(k, str) and k not in NOT_FORWARDED]
    if not keys:
        return
    names = ", ".join(f"`{k}`" for k in keys)
    field = kwargs.arg or "gradient_checkpointing_kwargs"
    why = ("says `use_reentrant=True`" if value.get("use_reentrant") is True else
           "has no `use_reentrant`, so transformers' own default does not apply and torch's (reentrant) does")
    message = (f"`{field}` passes {names} on to torch's checkpoint as keyword argument(s) of the checkpointed "
               f"layer, and the dict {why}: the reentrant checkpoint raises `ValueError: Unexpected keyword "
               f"arguments: {','.join(keys)}` at the first forward; take the key(s) out")
    if SELECTIVE in keys:
        message += (f" (`{SELECTIVE}` is TRL's key, read only by TRL's `SFTTrainer` on "
                    f"{facts.topic(SELECTIVE_TOPIC).versions_where(True)}; elsewhere selective checkpointing is "
                    "torch's `context_fn=` with `create_selective_checkpoint_contexts`, non-reentrant)")
    if assumed is not None and not assumed.known:
        yield Violation(kwargs.value, f"{message} (applies to {where}; {assumed.assumed})", (),
                        (assumed.assumed,), Severity.WARNING)
        return
    yield Violation(kwargs.value, message, (), (assumed.assumed,) if assumed is not None else ())


def _trl_refuses(kwargs: ast.keyword, selective: facts.Answer) -> Violation:
    """`selective` next to `use_reentrant=True` in an SFTConfig, on a TRL that reads `selective` or an unknown
    one: it fails on every TRL (TRL's own ValueError where it reads the key, torch's where it does not)."""
    return Violation(kwargs.value, f"`{kwargs.arg}` asks for TRL's selective checkpointing with "
                     f"`use_reentrant=True`: TRL's `SFTTrainer` raises `ValueError: {TRL_SELECTIVE_REENTRANT}` "
                     f"({facts.topic(SELECTIVE_TOPIC).versions_where(True)}; an older TRL hands `selective` to the "
                     "reentrant checkpoint, which raises `ValueError: Unexpected keyword arguments: selective`); "
                     "drop `use_reentrant` (SAC runs non-reentrant)", (), (selective.assumed,))
