"""checkpoint.fsdp-double-checkpoint: Hugging Face gradient checkpointing together with FSDP's own.

## What it does
Flags `TrainingArguments(gradient_checkpointing=True)` with `fsdp="full_shard ..."` (and, worse,
with `fsdp_config={"activation_checkpointing": True}`), and `gradient_checkpointing_enable()` in a
file that also applies FSDP activation checkpointing (`apply_activation_checkpointing`,
`checkpoint_wrapper`).

## Why is this bad?
Under FSDP full shard, transformers' gradient checkpointing runs the recomputation outside FSDP's
view and all-gathers the parameters a second time in backward; FSDP's `activation_checkpointing`
does the same job without it. With both switched on every block is checkpointed twice, and
transformers refuses the combination ("can't be set to True simultaneously").

## Fix safety
When `fsdp_config` is not given, the fix turns `gradient_checkpointing` off and adds
`fsdp_config={"activation_checkpointing": True}`. It is unsafe: FSDP's wrapper checkpoints the
auto-wrapped units, which may differ from the layers transformers checkpoints.
"""

from __future__ import annotations

from collections.abc import Iterator

from rootrank.check import edits
from rootrank.check.registry import Violation, rule
from rootrank.check.semantic import APPLY_ACTIVATION_CHECKPOINTING, CHECKPOINT_WRAPPER, Semantic, keyword
from rootrank.model import Applicability, Severity

RULE = "checkpoint.fsdp-double-checkpoint"


@rule(RULE, Severity.WARNING)
def fsdp_double_checkpoint(semantic: Semantic) -> Iterator[Violation]:
    for site in semantic.training_arguments():
        enabled = keyword(site.node, "gradient_checkpointing")
        if enabled is None or semantic.literal(enabled.value, site.frame) is not True:
            continue
        fsdp = keyword(site.node, "fsdp")
        config = keyword(site.node, "fsdp_config")
        config_value = semantic.literal(config.value, site.frame) if config is not None else None
        if isinstance(config_value, dict) and config_value.get("activation_checkpointing") is True:
            yield Violation(enabled, (
                "`gradient_checkpointing=True` together with `fsdp_config` activation_checkpointing: every block "
                "would be checkpointed twice, and transformers refuses the combination; keep only FSDP's "
                "`activation_checkpointing`"))
            continue
        mode = semantic.literal(fsdp.value, site.frame) if fsdp is not None else None
        modes = " ".join(mode) if isinstance(mode, tuple) and all(isinstance(m, str) for m in mode) else mode
        if isinstance(modes, str) and ("full_shard" in modes or "hybrid_shard" in modes):
            fix = None
            if config is None and not any(k.arg is None for k in site.node.keywords):
                fix = edits.fix("Let FSDP checkpoint instead (`fsdp_config` activation_checkpointing)",
                                Applicability.UNSAFE, edits.replace(semantic, enabled.value, "False"),
                                edits.add_keyword(semantic, site.node,
                                                  'fsdp_config={"activation_checkpointing": True}'))
            yield Violation(enabled, (
                "`gradient_checkpointing=True` with FSDP full/hybrid shard: the recomputation all-gathers the "
                'parameters again in backward; use `fsdp_config={"activation_checkpointing": True}` instead'),
                edits.fixes(fix))
    fsdp_ac = next((s.node for s in semantic.calls_to(APPLY_ACTIVATION_CHECKPOINTING, CHECKPOINT_WRAPPER)), None)
    if fsdp_ac is None:
        return
    for checkpoint_site in semantic.checkpoints:
        if checkpoint_site.api == "gradient_checkpointing_enable":
            yield Violation(checkpoint_site.call.func, (
                "`gradient_checkpointing_enable()` in a file that also applies FSDP activation checkpointing "
                f"(line {getattr(fsdp_ac, 'lineno', '?')}): the blocks are checkpointed twice and recomputed twice "
                "in backward; keep one of the two"))
