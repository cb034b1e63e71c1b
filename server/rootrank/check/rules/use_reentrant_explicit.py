"""checkpoint.use-reentrant-explicit: checkpointing whose reentrant mode is left to the default.

## What it does
Flags `torch.utils.checkpoint.checkpoint()` and `checkpoint_sequential()` calls without
`use_reentrant`, and Hugging Face's enable call (`gradient_checkpointing_enable()` /
`activation_checkpointing_enable()`) or `TrainingArguments(gradient_checkpointing=True)` /
`(activation_checkpointing=True)` without the kwargs, where the installed transformers checkpoints
reentrant by default (the version-facts topic `transformers.default-kwargs`; none where it runs
non-reentrant). With transformers' version unknown, a warning that names the versions it applies to.
Also PEFT's `prepare_model_for_kbit_training()` without `gradient_checkpointing_kwargs`, which passes `{}`
and so gets torch's reentrant default on every transformers version (topic `peft.kbit-empty-kwargs`).

Not in a pytest test module (`test_*.py`, `*_test.py`, pytest's default `python_files`): a test that
leaves the mode to the library's default exercises that default on purpose, and pinning it there would
stop testing it. The error-severity checks still run there.

## Why is this bad?
The default is the legacy reentrant implementation; PyTorch warns on every call and has announced
that the argument will be required. The reentrant mode is also the one behind most checkpointing
failures (torch.compile, DDP, `autograd.grad`, frozen inputs, keyword arguments).

## Fix safety
Two fixes are offered. `use_reentrant=False` is the recommendation but is unsafe: recomputation
semantics change. It is safe when the checkpointed function is deterministic given the torch RNG,
does not mutate its inputs or global state, and nothing relies on reentrant-only behaviour (hooks
firing in the recomputation's own backward). `use_reentrant=True` is safe: it spells out what runs
today and only silences the warning. Fix-all (`--fix`) therefore applies `True`; `--unsafe-fixes`
applies the recommended `False`. A call that passes keyword arguments to its function already raises
in reentrant mode, so it only gets the `False` fix. For Hugging Face calls `use_reentrant=True` is only
offered where the installed transformers is known to default to reentrant: elsewhere it would switch a
non-reentrant model to reentrant.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator

from rootrank.check import edits, hf
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CHECKPOINT_OWN_KEYWORDS, Semantic, keyword
from rootrank.check.source import is_test_code
from rootrank.model import Applicability, Fix, Severity
from rootrank.stack import facts

RULE = "checkpoint.use-reentrant-explicit"
_QUANTIZED = re.compile(r"load_in_[48]bit|BitsAndBytesConfig|quantization_config|GPTQConfig|AwqConfig|HqqConfig|"
                        r"TorchAoConfig|AqlmConfig|EetqConfig")
_RECOMMENDED = "Pass `{}` (recommended; unsafe: reentrant and non-reentrant recomputation differ)"
_KEEP = "Pass `{}` (keeps today's behaviour)"


@rule(RULE, Severity.WARNING)
def use_reentrant_explicit(semantic: Semantic) -> Iterator[Violation]:
    if is_test_code(semantic.path):
        return
    for site in semantic.checkpoints:
        if site.explicit or site.splat or site.api == "checkpoint_wrapper":
            continue
        call = site.call
        if hf.is_enable(site.api):
            if site.reentrant is not True:
                continue  # transformers >= 5.0 passes `use_reentrant=False` itself
            name = hf.kwargs_name(site.api)
            message = (f"`{site.api}()` without `{name}`: {_hf_default(site.assumed)}; pass "
                       f'`{name}={{"use_reentrant": False}}`')
            assumes, at_most, note = hf.qualify(site.assumed)
            yield Violation(call.func, message + note, _kwargs_fixes(semantic, call, name, site.assumed, site.api),
                            assumes, at_most)
            continue
        message = (f"`{site.api}()` without `use_reentrant`: the default is the legacy reentrant mode, PyTorch warns "
                   "on every call and will require the argument; pass `use_reentrant=False` (recommended) or "
                   "`use_reentrant=True` to keep today's behaviour")
        keep = edits.fix(_KEEP.format("use_reentrant=True"), Applicability.SAFE,
                         edits.add_keyword(semantic, call, "use_reentrant=True", site.api), keeps="reentrant")
        if any(k.arg not in CHECKPOINT_OWN_KEYWORDS for k in call.keywords):
            keep = None  # keyword arguments already make today's reentrant call raise: nothing worth keeping
        yield Violation(call.func, message, edits.fixes(
            edits.fix(_RECOMMENDED.format("use_reentrant=False"), Applicability.UNSAFE,
                      edits.add_keyword(semantic, call, "use_reentrant=False", site.api)),
            keep,
        ))
    yield from _kbit(semantic)
    for trainer in semantic.trainer_checkpointing():
        call = trainer.args.node
        if trainer.kwargs is not None or trainer.reentrant is not True:
            continue
        flag, name = trainer.flag.arg or hf.OLD, hf.kwargs_name(trainer.flag.arg or hf.OLD)
        message = (f"`{flag}=True` without `{name}`: {_hf_default(trainer.assumed)}; add "
                   f'`{name}={{"use_reentrant": False}}`')
        assumes, at_most, note = hf.qualify(trainer.assumed)
        yield Violation(trainer.flag, message + note, _kwargs_fixes(semantic, call, name, trainer.assumed, ""),
                        assumes, at_most)


def _kbit(semantic: Semantic) -> Iterator[Violation]:
    """`prepare_model_for_kbit_training(model)`: PEFT passes `gradient_checkpointing_kwargs={}`, which is not
    None, so transformers' default never applies and torch's (reentrant, with its warning) does. PEFT only
    enables checkpointing for a quantized model, so the file must load one."""
    if not _QUANTIZED.search(semantic.source):
        return
    for site in semantic.calls:
        name = semantic.qualified(site.node.func) or ""
        if not (name.startswith("peft.") and name.endswith(".prepare_model_for_kbit_training")):
            continue
        call = site.node
        flag = keyword(call, "use_gradient_checkpointing")
        if flag is not None and semantic.literal(flag.value, site.frame) is not True:
            continue
        if keyword(call, "gradient_checkpointing_kwargs") or any(k.arg is None for k in call.keywords) \
                or len(call.args) > 2:
            continue
        answer = semantic.fact("peft.kbit-empty-kwargs")
        if answer.is_(False):
            continue
        assumes, at_most, note = hf.qualify(answer)
        if not answer.known:
            note = f" (applies to {answer.topic.versions_where(True)}; {answer.assumed})"
        message = ("`prepare_model_for_kbit_training()` without `gradient_checkpointing_kwargs`: PEFT passes `{}` "
                   "to `gradient_checkpointing_enable`, so transformers' own default does not apply and PyTorch "
                   "checkpoints reentrant with its missing-`use_reentrant` warning, on every transformers version; "
                   'pass `gradient_checkpointing_kwargs={"use_reentrant": False}`')
        yield Violation(call.func, message + note,
                        _kwargs_fixes(semantic, call, "gradient_checkpointing_kwargs", answer, ""), assumes, at_most)


def _hf_default(answer: facts.Answer | None) -> str:
    if answer is not None and answer.known and answer.value is None:
        return "transformers passes no `use_reentrant`, so PyTorch checkpoints reentrant and warns on every call"
    return "transformers checkpoints reentrant (`use_reentrant=True`)"


def _kwargs_fixes(semantic: Semantic, call: ast.Call, name: str, answer: facts.Answer | None,
                  api: str) -> tuple[Fix, ...]:
    # "Keeps today's behaviour" only where today's behaviour is known to be reentrant: on transformers >= 5.0
    # the same edit would switch a non-reentrant model to reentrant.
    keep = answer is not None and answer.known
    return edits.fixes(
        edits.fix(_RECOMMENDED.format(f'{name}={{"use_reentrant": False}}'), Applicability.UNSAFE,
                  edits.add_keyword(semantic, call, f'{name}={{"use_reentrant": False}}', api)),
        edits.fix(_KEEP.format(f'{name}={{"use_reentrant": True}}'), Applicability.SAFE,
                  edits.add_keyword(semantic, call, f'{name}={{"use_reentrant": True}}', api),
                  keeps="reentrant") if keep else None,
    )
