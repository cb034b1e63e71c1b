"""Hugging Face's checkpointing API under both of its names, and what the installed transformers makes of it.

transformers 5.23 renamed `gradient_checkpointing_enable`/`_disable`, `is_gradient_checkpointing` and the
TrainingArguments fields `gradient_checkpointing`/`gradient_checkpointing_kwargs` to `activation_checkpointing*`;
the old names still work (with a FutureWarning) until v6. Rules read either spelling through this module, and
fixes write the spelling of the call they edit (valid on the version the code was written for). Which version
does what comes from the version-facts table (rootrank.stack.facts), never from here.
"""

from __future__ import annotations

import ast
from collections.abc import Mapping

from rootrank.model import Severity
from rootrank.stack import facts

OLD, NEW = "gradient_checkpointing", "activation_checkpointing"
ENABLE = (f"{OLD}_enable", f"{NEW}_enable")
DISABLE = (f"{OLD}_disable", f"{NEW}_disable")
IS_ON = (f"is_{OLD}", f"is_{NEW}")
FLAGS = (OLD, NEW)  # TrainingArguments fields, Trainer JSON/YAML keys, CLI flags
KWARGS = (f"{OLD}_kwargs", f"{NEW}_kwargs")
# Keys of the kwargs dict that transformers >= 5.16/5.17 pops before torch's checkpoint sees the rest.
OWN_KWARGS = ("every_n_layers", "offload")


def is_enable(api: str) -> bool:
    return api in ENABLE


def kwargs_name(name: str) -> str:
    """The kwargs keyword that goes with a method or flag name: `activation_checkpointing_enable` ->
    `activation_checkpointing_kwargs`."""
    return f"{NEW}_kwargs" if name.startswith(NEW) else f"{OLD}_kwargs"


def keyword_of(call: ast.Call, names: tuple[str, ...]) -> ast.keyword | None:
    """The keyword of `call` spelled with one of `names`; the new name wins when both are given (as
    TrainingArguments resolves them)."""
    found = {k.arg: k for k in call.keywords if k.arg in names}
    for name in reversed(names):
        if name in found:
            return found[name]
    return None


def flag(call: ast.Call) -> ast.keyword | None:
    return keyword_of(call, FLAGS)


def kwargs(call: ast.Call) -> ast.keyword | None:
    return keyword_of(call, KWARGS)


def default_reentrant(versions: Mapping[str, str]) -> facts.Answer:
    """What the enable call does without kwargs: value True (reentrant), False (non-reentrant), None (torch's
    default, reentrant too); unknown when transformers' version is."""
    return facts.answer("transformers.default-kwargs", versions)


def default_is_reentrant(answer: facts.Answer) -> bool | None:
    if not answer.known:
        return None
    return answer.value is not False  # True, or None: torch's own default, which is reentrant


def new_names(versions: Mapping[str, str]) -> bool:
    """Whether the installed transformers has the `activation_checkpointing*` names (False when unknown)."""
    return facts.answer("transformers.activation-checkpointing-names", versions).is_(True) is True


def reentrant_versions() -> str:
    """`transformers <5.0.0`: where a plain enable call runs reentrant."""
    return facts.topic("transformers.default-kwargs").versions_where_not(False)


def qualify(answer: facts.Answer | None) -> tuple[tuple[str, ...], Severity | None, str]:
    """(assumes, severity cap, message note) for a finding whose truth rests on `answer`.

    Known: the version it assumed. Unknown: at most a warning, and the note names the versions the finding
    applies to.
    """
    if answer is None:
        return (), None, ""
    if answer.known:
        return (answer.assumed,), None, ""
    # transformers' default is reentrant wherever it is not False; TRL's forcing of non-reentrant is missing
    # wherever it is False.
    where = answer.topic.versions_where_not(False) if answer.topic.id == "transformers.default-kwargs" else \
        answer.topic.versions_where(False)
    return (answer.assumed,), Severity.WARNING, f" (applies to {where}; {answer.assumed})"
