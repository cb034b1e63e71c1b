"""What a checkpoint-related call does in this file: a plain record (`CallExplanation`) for any front
end to render (the editor's hover, `rootrank explain FILE:LINE`, measured numbers later).

Reentrant or not (and why), what that means with the workspace's torch, which interacting features the
file uses (compile, DDP, FSDP, PEFT), the memory/compute trade-off, and how much of the model the call
checkpoints. Pure functions of the call reader's facts (calls.py) and the environment
(rootrank.environment): nothing is imported or run.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from rootrank.check import hf
from rootrank.check.calls import CHECKPOINTING, TARGETS
from rootrank.environment import version_tuple
from rootrank.stack import facts as version_facts

if TYPE_CHECKING:
    from rootrank.check.calls import Call, FileFacts
    from rootrank.environment import Environment

REENTRANT = "reentrant"
NON_REENTRANT = "non-reentrant"
RUNTIME = "decided at run time"

MEANING = {
    REENTRANT: (
        "Reentrant checkpointing runs the block under `no_grad` in forward and re-runs it inside backward "
        "through an `autograd.Function`. It needs at least one **input that requires grad** (with frozen "
        "embeddings or LoRA the block's parameters silently get no gradient), does not support "
        "`torch.autograd.grad`/`backward(inputs=...)` or keyword arguments, marks DDP parameters ready twice, "
        "and makes `torch.compile` break the graph around the block."
    ),
    NON_REENTRANT: (
        "Non-reentrant checkpointing records the graph in forward and recomputes activations through "
        "saved-tensor hooks when backward needs them. It works with inputs that do not require grad, "
        "`torch.autograd.grad`, keyword arguments, DDP and `torch.compile`, and raises `CheckpointError` "
        "when the recomputation differs from the forward (non-deterministic blocks)."
    ),
}


def passes_use_reentrant(call: Call) -> bool:
    """Whether `use_reentrant` reaches torch explicitly from this call."""
    if call.name in ("checkpoint", "checkpoint_sequential"):
        return call.keywords.get("use_reentrant", "None") != "None"
    if hf.is_enable(call.name):
        return "use_reentrant" in call.keywords.get(hf.kwargs_name(call.name), "")
    return True  # checkpoint_wrapper and apply_activation_checkpointing always pass it


def mode_of(call: Call, env: Environment) -> tuple[str, str]:
    """(mode, why) for a checkpointing call."""
    kw = call.keywords
    if call.name in ("checkpoint", "checkpoint_sequential"):
        value = kw.get("use_reentrant")
        if value == "False":
            return NON_REENTRANT, "`use_reentrant=False`"
        if value == "True":
            return REENTRANT, "`use_reentrant=True`"
        if value is not None and value != "None":
            return RUNTIME, f"`use_reentrant={value}`"
        if call.has_star_kwargs:
            return RUNTIME, "`use_reentrant` may come from `**kwargs`; reentrant if it does not"
        return REENTRANT, "`use_reentrant` not passed: PyTorch falls back to the reentrant implementation"
    if hf.is_enable(call.name):
        name = hf.kwargs_name(call.name)
        value = kw.get(name, "")
        compact = value.replace(" ", "").replace('"', "'")
        if "'use_reentrant':False" in compact:
            return NON_REENTRANT, f'`{name}={{"use_reentrant": False}}`'
        if "'use_reentrant':True" in compact:
            return REENTRANT, f'`{name}={{"use_reentrant": True}}`'
        if value and "use_reentrant" in value:
            return RUNTIME, f"`{name}={value}`"
        # transformers' own default, which depends on its version (the version-facts table).
        answer = hf.default_reentrant(env.versions)
        if answer.row is None:
            t = answer.topic
            return RUNTIME, (f"no `use_reentrant` in `{name}`: transformers' default, and its version is unknown "
                             f"({answer.assumed}): reentrant on {t.versions_where_not(False)}, non-reentrant on "
                             f"{t.versions_where(False)}")
        mode = NON_REENTRANT if answer.value is False else REENTRANT
        return mode, (f"no `use_reentrant` in `{name}`: transformers {answer.version} {answer.row.says} "
                      f"({answer.row.source})")
    if call.name == "checkpoint_wrapper":
        value = kw.get("checkpoint_impl", "")
        if "NO_REENTRANT" in value:
            return NON_REENTRANT, "`checkpoint_impl=CheckpointImpl.NO_REENTRANT`"
        if "REENTRANT" in value:
            return REENTRANT, "`checkpoint_impl=CheckpointImpl.REENTRANT`"
        return NON_REENTRANT, "default `checkpoint_impl=CheckpointImpl.NO_REENTRANT` (torch 2.x)"
    if call.name == "apply_activation_checkpointing":
        value = kw.get("checkpoint_wrapper_fn", "")
        if "NO_REENTRANT" in value or not value:
            return NON_REENTRANT, ("default wrapper `checkpoint_wrapper` (non-reentrant)" if not value
                                   else f"`checkpoint_wrapper_fn={value}`")
        if "REENTRANT" in value:
            return REENTRANT, f"`checkpoint_wrapper_fn={value}`"
        return RUNTIME, f"`checkpoint_wrapper_fn={value}`"
    return "", ""


def torch_note(mode: str, env: Environment, passed: bool = True, call: str = "checkpoint",
               curried: bool = False) -> str:
    """What the mode means with the workspace's torch; `passed`: whether use_reentrant reaches torch explicitly;
    `curried`: `checkpoint(...)` called without a function (torch >= 2.14's decorator form)."""
    version = env.version("torch")
    if version is None:
        return f"torch is not installed in the workspace environment ({env.where}); the notes below assume torch 2.x."
    v = version_tuple(version) or (0, 0)
    head = f"torch {version} (from {env.where}): "
    if curried:
        answer = version_facts.answer("torch.curried-checkpoint", env.versions)
        if answer.known and answer.value is not True:
            return head + (f"there is no curried form: `checkpoint(...)` without a function raises `TypeError: "
                           f"{answer.value}` ({answer.row.source if answer.row else ''}); it is new in "
                           f"{answer.topic.since(True)}.")
        head += "the curried form returns a decorator; the mode applies when the decorated function is called. "
    if v < (1, 11):
        return head + "there is no `use_reentrant` argument; checkpointing is always reentrant."
    if hf.is_enable(call) and not passed:
        answer = hf.default_reentrant(env.versions)
        if answer.known and answer.value is not None:
            return head + "transformers passes `use_reentrant` explicitly, so torch does not warn."
        return head + ("transformers before 4.38 calls checkpoint without `use_reentrant`, and torch ≥ 2.1 then "
                       "prints a `UserWarning`; later ones pass it explicitly (no warning).")
    if mode == REENTRANT and not passed and v < (2, 1):
        return head + "reentrant is the default and is used silently."
    if mode == REENTRANT and not passed and version.startswith("2.3.0a0"):
        return head + "this pre-release raises `ValueError` when `use_reentrant` is not passed."
    if mode == REENTRANT and not passed:
        answer = version_facts.answer("torch.missing-use-reentrant", env.versions)
        if answer.row is None:
            return head + (f"outside the torch versions read ({answer.topic.versions_where_not(None)}), where a "
                           "call without `use_reentrant` still runs reentrant and prints a `UserWarning`; "
                           "this version may differ.")
        return head + (f"a call without `use_reentrant` still runs reentrant and prints `UserWarning: "
                       f"{answer.value.split('. ')[0]}. ...` (it does not raise; {answer.row.source}).")
    if mode == REENTRANT:
        return head + "reentrant checkpointing, chosen explicitly: no warning."
    if mode == NON_REENTRANT:
        return head + "non-reentrant checkpointing is supported and is the implementation PyTorch recommends."
    return head + "both implementations are available."


def interactions(mode: str, facts: FileFacts) -> list[str]:
    notes = []
    used = facts.features
    if "compile" in used:
        notes.append(f"`torch.compile` (line {used['compile']}): "
                     + ("a reentrant checkpoint breaks the graph (or fails under compiled autograd); use "
                        "`use_reentrant=False`." if mode == REENTRANT else
                        "non-reentrant checkpoints are traced into the compiled graph."))
    if "DDP" in used:
        notes.append(f"DDP (line {used['DDP']}): "
                     + ("reentrant backward marks parameters ready twice: \"Expected to mark a variable ready only "
                        "once\" unless `static_graph=True`." if mode == REENTRANT else
                        "works with non-reentrant checkpointing without `static_graph`."))
    if "FSDP" in used:
        notes.append(f"FSDP (line {used['FSDP']}): "
                     + ("use non-reentrant checkpointing (`checkpoint_wrapper`'s default) and apply it before "
                        "sharding." if mode == REENTRANT else "apply checkpointing before sharding the modules."))
    if "PEFT" in used:
        notes.append(f"PEFT (line {used['PEFT']}): "
                     + ("the base model is frozen, so no input of a checkpointed block requires grad and the "
                        "adapters inside get **no gradient** unless you call `model.enable_input_require_grads()` "
                        "or use non-reentrant checkpointing." if mode == REENTRANT else
                        "frozen inputs are fine with non-reentrant checkpointing."))
    if "DeepSpeed" in used:
        notes.append(f"DeepSpeed (line {used['DeepSpeed']}): its activation checkpointing config and ZeRO-3 "
                     "interact with recomputation; keep one checkpointing mechanism per block.")
    return notes


def coverage(call: Call, facts: FileFacts) -> str:
    """How much of the model this call checkpoints."""
    kw = call.keywords
    if call.name == "checkpoint":
        block = call.args[0] if call.args else "the function"
        text = f"`{block}`"
        if call.loops:
            text += f" once per iteration of `{call.loops[-1]}`"
            if len(call.loops) > 1:
                text += f" (nested in `{call.loops[0]}`)"
        else:
            text += " at this call site"
        if call.conditions:
            text += f", only when `{' and '.join(call.conditions)}`"
    elif call.name == "checkpoint_sequential":
        segments = kw.get("segments") or (call.args[1] if len(call.args) > 1 else "?")
        stack = call.args[0] if call.args else "the sequence"
        text = f"`{stack}` split into `{segments}` segments; every segment but the last is checkpointed"
    elif hf.is_enable(call.name):
        every = kw.get("every_n_layers")
        text = "every layer of the model that supports gradient checkpointing (typically each decoder block)"
        if every:
            since = version_facts.topic("transformers.every-n-layers").versions_where(True)
            text = f"every {every}-th decoder layer (`every_n_layers={every}`, {since})"
    elif call.name == "checkpoint_wrapper":
        text = f"the wrapped module `{call.args[0]}`" if call.args else "the wrapped module"
    elif call.name == "apply_activation_checkpointing":
        check = kw.get("check_fn")
        text = (f"every submodule for which `check_fn` is true: `{check}`" if check else
                "every submodule (no `check_fn`: the default wraps all of them)")
    else:
        return ""
    sites = len(facts.checkpoint_calls())
    if sites > 1:
        text += f". {sites} checkpointing calls in this file."
    return text


TRADE_OFF = ("Activations inside the checkpointed region are not kept for backward, only its inputs; backward "
             "recomputes the region's forward. Peak activation memory drops roughly to one region at a time; "
             "compute grows by about one extra forward of the region (≈ +30 % per step when every layer is "
             "checkpointed).")


@dataclass(frozen=True)
class OtherCheckpoint:
    """A checkpointing call elsewhere in the file, as listed under a compile/DDP/FSDP call."""

    line: int
    written: str
    mode: str
    why: str


@dataclass(frozen=True)
class CallExplanation:
    """What one call does here. For a checkpointing call: `mode` .. `coverage`; for a compile/DDP/FSDP
    call: `description`, `flags` and the file's `checkpoints`, with a `note` when one of them is
    reentrant."""

    line: int
    written: str  # the callee as written, e.g. `cp.checkpoint`
    target: str  # what it resolves to, e.g. `torch.utils.checkpoint.checkpoint`
    is_checkpointing: bool
    mode: str = ""  # REENTRANT | NON_REENTRANT | RUNTIME
    why: str = ""
    torch_note: str = ""
    meaning: str = ""
    interactions: tuple[str, ...] = ()
    trade_off: str = ""
    coverage: str = ""
    description: str = ""
    torch_version: str = ""  # "torch X (from where)", for the non-checkpointing calls
    checkpoints: tuple[OtherCheckpoint, ...] = ()
    note: str = ""


_DESCRIPTIONS = {
    "compile": ("Compiles the module/function with TorchDynamo + Inductor on first call; graph breaks and "
                "recompilations cost time at every new shape or guard failure."),
    "DistributedDataParallel": ("Wraps the model for data-parallel training; gradients are all-reduced in buckets "
                                "as backward marks parameters ready."),
    "FSDP": ("Shards parameters, gradients and optimizer state across ranks; parameters are all-gathered again "
             "when a checkpointed block is recomputed in backward."),
}

_REENTRANT_NOTES = {
    "DistributedDataParallel": ("reentrant checkpointing under DDP marks parameters ready twice (\"Expected to mark "
                                "a variable ready only once\") unless `static_graph=True`; prefer "
                                "`use_reentrant=False`."),
    "compile": "reentrant checkpoints break the compiled graph; prefer `use_reentrant=False`.",
}


def explain_call(call: Call, facts: FileFacts, env: Environment) -> CallExplanation:
    """The explanation of one call read by calls.py, with the workspace's library versions."""
    if call.name in CHECKPOINTING:
        mode, why = mode_of(call, env)
        return CallExplanation(
            call.line, call.written, TARGETS[call.name], is_checkpointing=True, mode=mode, why=why,
            torch_note=torch_note(mode, env, passes_use_reentrant(call), call.name,
                                  call.name == "checkpoint" and not call.args and "function" not in call.keywords
                                  and not call.has_star_kwargs),
            meaning=MEANING.get(mode, ""), interactions=tuple(interactions(mode, facts)), trade_off=TRADE_OFF,
            coverage=coverage(call, facts))
    description = _DESCRIPTIONS.get(call.name, _DESCRIPTIONS["FSDP"])
    if call.name == "DistributedDataParallel":
        flags = ", ".join(f"`{k}={call.keywords[k]}`" for k in ("find_unused_parameters", "static_graph")
                          if k in call.keywords)
        description += f" Here: {flags}." if flags else ""
    version = env.version("torch")
    others = tuple(OtherCheckpoint(c.line, c.written, *mode_of(c, env)) for c in facts.checkpoint_calls())
    note = ""
    if any(o.mode == REENTRANT for o in others):
        note = _REENTRANT_NOTES.get(call.name, "prefer non-reentrant checkpointing with FSDP.")
    return CallExplanation(call.line, call.written, TARGETS[call.name], is_checkpointing=False, description=description,
                           torch_version=f"torch {version} (from {env.where})" if version else "",
                           checkpoints=others, note=note)


def explanation_markdown(explanation: CallExplanation) -> str:
    """The explanation as Markdown (the hover's text; `rootrank explain FILE:LINE` prints the same)."""
    e = explanation
    parts = [f"**`{e.written}`**: `{e.target}`", ""]
    if e.is_checkpointing:
        parts.append(f"**{e.mode.capitalize()}**: {e.why}.")
        parts += ["", e.torch_note]
        if e.meaning:
            parts += ["", e.meaning]
        if e.interactions:
            parts += ["", "**This file also uses**", ""] + [f"- {n}" for n in e.interactions]
        parts += ["", f"**Trade-off**: {e.trade_off}"]
        parts += ["", f"**Checkpointed**: {e.coverage}"]
        return "\n".join(parts)
    parts.append(e.description)
    if e.torch_version:
        parts += ["", f"{e.torch_version}."]
    if e.checkpoints:
        parts += ["", "**Checkpointing in this file**", ""]
        parts += [f"- line {o.line}: `{o.written}` — {o.mode} ({o.why})" for o in e.checkpoints[:8]]
        if e.note:
            parts += ["", f"**Note**: {e.note}"]
    else:
        parts += ["", "No activation checkpointing in this file."]
    return "\n".join(parts)


def call_markdown(call: Call, facts: FileFacts, env: Environment) -> str:
    """The hover text for one call."""
    return explanation_markdown(explain_call(call, facts, env))
