"""checkpoint.trl-peft-zero3: TRL's forced reentrant checkpointing for PEFT + ZeRO-3, lost on newer transformers.

## What it does
Flags a TRL `SFTTrainer` that trains a PEFT model (`peft_config=` or a `get_peft_model` model) with a
TRL/transformers config whose `deepspeed=` is a ZeRO-3 config written in the file (a dict literal or a module
constant), with checkpointing on (explicitly, or TRL's own default) and no `use_reentrant` in the
checkpointing kwargs, where TRL forces `use_reentrant=True` (`trl.peft-zero3-reentrant`) and transformers
no longer reads the field TRL writes (`transformers.old-kwargs-field`). A DeepSpeed config given as a path is
not read (the check sees only the file).

## Why is this bad?
TRL assigns its forced kwargs to `args.gradient_checkpointing_kwargs`; from transformers 5.23 that is a copy
the Trainer does not read, so the run checkpoints with transformers' default (non-reentrant) after all, the
configuration TRL forces away from, and nothing is printed.

## Fix safety
Unsafe: `activation_checkpointing_kwargs={"use_reentrant": True}` makes the run reentrant, as TRL intends,
but changes what it does today.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits, hf
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import UNKNOWN, CallSite, Semantic
from rootrank.model import Applicability, Severity
from rootrank.stack import facts

RULE = "checkpoint.trl-peft-zero3"
TRAINERS = ("trl.SFTTrainer", "trl.trainer.SFTTrainer", "trl.trainer.sft_trainer.SFTTrainer")
PEFT_MODEL = ("peft.get_peft_model", "peft.mapping.get_peft_model", "peft.mapping_func.get_peft_model")
FORCING, FIELD = "trl.peft-zero3-reentrant", "transformers.old-kwargs-field"


@rule(RULE, Severity.WARNING)
def trl_peft_zero3(semantic: Semantic) -> Iterator[Violation]:
    forcing, field = semantic.fact(FORCING), semantic.fact(FIELD)
    if forcing.is_(False) or field.is_("read"):
        return
    peft_in_file = any(True for _ in semantic.calls_to(*PEFT_MODEL))
    for trainer in semantic.calls_to(*TRAINERS):
        peft = _keyword(trainer.node, "peft_config")
        if not peft_in_file and (peft is None or semantic.literal(peft.value, trainer.frame) is None):
            continue
        config = _config(semantic, trainer)
        if config is None or not _zero3(semantic, config) or not checkpointing_on(semantic, config):
            continue
        kwargs = hf.kwargs(config.node)
        given = semantic.literal(kwargs.value, config.frame) if kwargs is not None else {}
        if not isinstance(given, dict) or "use_reentrant" in given:
            continue  # unknown, or the mode is said (TRL's override of `False` reaches the Trainer: same dict)
        name = kwargs.arg if kwargs is not None and kwargs.arg else hf.kwargs_name(hf.NEW)
        fix = edits.fix(f'Say the mode TRL forces (`{name}={{"use_reentrant": True}}`)', Applicability.UNSAFE,
                        edits.set_keyword(semantic, config.node, name, '{"use_reentrant": True}'))
        assumed = (forcing.assumed, field.assumed)
        note = ""
        if not (forcing.known and field.known):
            note = (f" (applies to {facts.topic(FORCING).versions_where_not(False)} with "
                    f"{facts.topic(FIELD).versions_where('mirror')}; {', '.join(assumed)})")
        yield Violation(kwargs or config.node.func,
                        "PEFT + DeepSpeed ZeRO-3 under TRL's `SFTTrainer` with no `use_reentrant`: TRL forces "
                        "`use_reentrant=True` by assigning `args.gradient_checkpointing_kwargs`, which transformers "
                        "no longer reads, so the run checkpoints non-reentrant (transformers' default) without a "
                        f'word; set `{name}={{"use_reentrant": True}}`{note}',
                        edits.fixes(fix), assumed, Severity.WARNING)


def _keyword(call: ast.Call, name: str) -> ast.keyword | None:
    return next((k for k in call.keywords if k.arg == name), None)


def _config(semantic: Semantic, trainer: CallSite) -> CallSite | None:
    """The TrainingArguments-like call the trainer's `args` (keyword, or second positional) comes from."""
    found = _keyword(trainer.node, "args")
    value = found.value if found is not None else (trainer.node.args[1] if len(trainer.node.args) > 1 else None)
    configs = {id(site.node): site for site in semantic.training_arguments()}
    if isinstance(value, ast.Call):
        return configs.get(id(value))
    if isinstance(value, ast.Name):
        sites = [configs[id(a.value)] for a in semantic.assigned(value.id) if id(a.value) in configs]
        return sites[0] if len(sites) == 1 else None
    return None


def _zero3(semantic: Semantic, config: CallSite) -> bool:
    found = _keyword(config.node, "deepspeed")
    data = semantic.literal(found.value, config.frame) if found is not None else UNKNOWN
    zero = data.get("zero_optimization") if isinstance(data, dict) else None
    return isinstance(zero, dict) and zero.get("stage") == 3


def checkpointing_on(semantic: Semantic, config: CallSite) -> bool:
    """Whether the TrainingArguments-like call turns checkpointing on (either field name, or TRL's default)."""
    flag = hf.flag(config.node)
    if flag is not None:
        return semantic.literal(flag.value, config.frame) is True
    # Not set: TRL's configs default it to True (trl.checkpointing-default), transformers' to False.
    trl_config = (semantic.qualified(config.node.func) or "").startswith("trl.")
    return trl_config and semantic.fact("trl.checkpointing-default").is_(True) is True
