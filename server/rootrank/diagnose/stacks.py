"""Which libraries a run used, told by the file paths and names in its log (traceback frames, loggers).

The stack picks the variant of an entry's fix that fits the user (PEFT, DeepSpeed, FSDP, ...).
"""

from __future__ import annotations

import re

# (stack, literal looked for, optional regex confirming it); literals keep the per-line cost low.
_SIGNS: tuple[tuple[str, str, re.Pattern[str] | None], ...] = (
    ("peft", "peft", re.compile(r"[/\\]peft[/\\]|\bpeft\.|PeftModel|LoraModel")),
    ("deepspeed", "deepspeed", None),
    ("fsdp", "fsdp", re.compile(r"[/\\]fsdp[/\\]|FullyShardedDataParallel|fully_shard|_fsdp")),
    ("fsdp", "FullyShardedDataParallel", None),
    ("transformers", "transformers", re.compile(r"[/\\]transformers[/\\]|transformers\.")),
    ("accelerate", "accelerate", re.compile(r"[/\\]accelerate[/\\]|accelerate\.")),
    ("lightning", "lightning", re.compile(r"[/\\](?:pytorch_)?lightning[/\\]|lightning\.")),
    ("megatron", "megatron", re.compile(r"[/\\]megatron[/\\]|megatron\.", re.IGNORECASE)),
    ("ddp", "DistributedDataParallel", None),
    ("ddp", "parallel/distributed.py", None),
    ("compile", "_dynamo", None),
    ("compile", "_inductor", None),
    ("trl", "trl", re.compile(r"[/\\]trl[/\\]|trl\.trainer")),
    ("xformers", "xformers", None),
    ("ray", "pid=", re.compile(r"^\((?:[\w.:-]+,?\s)?pid=\d+")),
)


# Most lines show no stack at all: one scan for any of the literals says so.
_ANY_SIGN = re.compile("|".join(sorted({re.escape(literal) for _stack, literal, _confirm in _SIGNS})))


# What detect_stacks looks at, for shapes.digit_classes.
REGEXES = (_ANY_SIGN.pattern, *(re.escape(literal) for _stack, literal, _confirm in _SIGNS),
           *(confirm.pattern for _stack, _literal, confirm in _SIGNS if confirm is not None))


def stacks_in(text: str) -> frozenset[str]:
    """Every stack `text` shows."""
    return frozenset(detect_stacks(text))


def detect_stacks(text: str, known: frozenset[str] | set[str] = frozenset()) -> set[str]:
    """The stacks `text` shows, leaving out the `known` ones (no need to look for them again)."""
    found: set[str] = set()
    if not _ANY_SIGN.search(text):
        return found
    for stack, literal, confirm in _SIGNS:
        if stack not in known and literal in text and (confirm is None or confirm.search(text)):
            found.add(stack)
    return found
