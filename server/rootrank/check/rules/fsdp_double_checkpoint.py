"""checkpoint.fsdp-double-checkpoint: Hugging Face gradient checkpointing together with FSDP's own.

## What it does
Flags `TrainingArguments(gradient_checkpointing=True)` with `fsdp="full_shard ..."` (and, worse,
with `fsdp_config={"activation_checkpointing": True}`), and `gradient_checkpointing_enable()` in a
file that also applies FSDP activation checkpointing (`apply_activation_checkpointing`,
`checkpoint_wrapper`, or Lightning's `FSDPStrategy(activation_checkpointing_policy=...)`) when the enable
call's own checkpoint may be reentrant; and Lightning's policy in a file that also wraps layers itself.

## Why is this bad?
Under FSDP full shard, transformers' gradient checkpointing runs the recomputation outside FSDP's
view and all-gathers the parameters a second time in backward; FSDP's `activation_checkpointing`
does the same job without it. With both switched on every block is checkpointed twice, and
transformers refuses the combination ("can't be set to True simultaneously"). Nesting transformers'
checkpoint inside a non-reentrant wrapper costs an extra recompute only when the inner checkpoint is reentrant
(a tiny Llama layer's MLP runs three times per step instead of two; non-reentrant inside non-reentrant runs it
twice, as one level does: tests/stack/test_matrix.py::test_nested_checkpoint_recomputes), so a non-reentrant
enable call (transformers' default from 5.0, facts table) is not reported. Lightning skips its own policy
when the model already contains `CheckpointWrapper` layers (`lightning.fsdp-already-checkpointed`): only
the layers wrapped by hand stay checkpointed.

## Fix safety
When `fsdp_config` is not given, the fix turns `gradient_checkpointing` off and adds
`fsdp_config={"activation_checkpointing": True}`. It is unsafe: FSDP's wrapper checkpoints the
auto-wrapped units, which may differ from the layers transformers checkpoints.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from rootrank.check import edits, hf
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import CallSite, Semantic, keyword
from rootrank.model import Applicability, Severity

RULE = "checkpoint.fsdp-double-checkpoint"
LIGHTNING_ROOTS = ("lightning", "pytorch_lightning", "lightning_fabric")
# FSDPStrategy's policy keyword, and its deprecated predecessor (lightning/fabric/strategies/fsdp.py, 2.6.6).
POLICY_KEYWORDS = ("activation_checkpointing_policy", "activation_checkpointing")
ALREADY_TOPIC = "lightning.fsdp-already-checkpointed"


@rule(RULE, Severity.WARNING)
def fsdp_double_checkpoint(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.training_arguments():
        enabled = hf.flag(site.node)
        if enabled is None or semantic.literal(enabled.value, site.frame) is not True:
            continue
        flag = enabled.arg or hf.OLD
        fsdp = keyword(site.node, "fsdp")
        config = keyword(site.node, "fsdp_config")
        config_value = semantic.literal(config.value, site.frame) if config is not None else None
        if isinstance(config_value, dict) and config_value.get("activation_checkpointing") is True:
            yield Violation(enabled, (
                f"`{flag}=True` together with `fsdp_config` activation_checkpointing: every block "
                "would be checkpointed twice, and transformers refuses the combination; keep only FSDP's "
                "`activation_checkpointing`"))
            continue
        mode = semantic.literal(fsdp.value, site.frame) if fsdp is not None else None
        modes = " ".join(mode) if isinstance(mode, tuple) and all(isinstance(m, str) for m in mode) else mode
        # transformers >= 5.10.1 takes `fsdp=True` and warns for any FSDP; older ones for full/hybrid shard only.
        any_fsdp = semantic.fact("transformers.fsdp-bool").is_(False) is not True
        sharded = isinstance(modes, str) and ("full_shard" in modes or "hybrid_shard" in modes)
        if sharded or ((modes is True or (isinstance(modes, str) and modes.strip())) and any_fsdp):
            fix = None
            if config is None and not any(k.arg is None for k in site.node.keywords):
                fix = edits.fix("Let FSDP checkpoint instead (`fsdp_config` activation_checkpointing)",
                                Applicability.UNSAFE, edits.replace(semantic, enabled.value, "False"),
                                edits.add_keyword(semantic, site.node,
                                                  'fsdp_config={"activation_checkpointing": True}'))
            yield Violation(enabled, (
                f"`{flag}=True` with FSDP{' full/hybrid shard' if sharded else ''}: the recomputation all-gathers the "
                'parameters again in backward; use `fsdp_config={"activation_checkpointing": True}` instead'),
                edits.fixes(fix))
    wrappers = [site for site in semantic.checkpoints if site.api in ("apply_activation_checkpointing",
                                                                        "checkpoint_wrapper")]
    policies = [(strategy, policy) for strategy in semantic.calls_named("FSDPStrategy", LIGHTNING_ROOTS)
                if (policy := _policy(semantic, strategy)) is not None]
    if wrappers and policies:
        already = semantic.fact(ALREADY_TOPIC)
        for _, policy in policies:
            yield Violation(policy, (
                f"Lightning's `FSDPStrategy({policy.arg}=...)` in a file that also wraps layers in "
                f"`checkpoint_wrapper` (line {wrappers[0].call.lineno}): when the model reaches Fabric/the Trainer "
                "with those wrappers, Lightning skips its policy (`FSDP checkpointing is configured, but the model "
                "already contains checkpointed layers. Checkpointing will be ignored.`) and only the layers wrapped "
                "by hand are checkpointed; keep one of the two"), (), (already.assumed,) if already.known else ())
    outer = [*(s.call for s in wrappers), *(p for _, p in policies)]
    if not outer:
        return
    # Lightning's policy applies the non-reentrant `checkpoint_wrapper`, as a bare `apply_activation_checkpointing`.
    outer_non_reentrant = all(site.reentrant is False for site in wrappers)
    for checkpoint_site in semantic.checkpoints:
        if not hf.is_enable(checkpoint_site.api):
            continue
        if checkpoint_site.reentrant is False and outer_non_reentrant:
            continue  # nested non-reentrant checkpoints recompute once, as one level does
        where = getattr(outer[0], "lineno", "?")
        message = (f"`{checkpoint_site.api}()` in a file that also applies FSDP activation checkpointing (line "
                   f"{where}): transformers' checkpoint runs inside the wrapper's, and a reentrant inner checkpoint "
                   "is recomputed again in the wrapper's recomputation (each block's forward runs three times per "
                   "step instead of two); keep one of the two")
        assumes, at_most, note = hf.qualify(checkpoint_site.assumed)
        yield Violation(checkpoint_site.call.func, message + note, (), assumes, at_most)


def _policy(semantic: Semantic, strategy: CallSite) -> ast.keyword | None:
    """The policy keyword of a Lightning `FSDPStrategy(...)` call, when it is given and not `None`."""
    for name in POLICY_KEYWORDS:
        found = keyword(strategy.node, name)
        if found is not None and not (isinstance(found.value, ast.Constant) and found.value.value is None):
            return found
    return None
