"""The activation memory of a real CPU training step, measured two independent ways.

`held_bytes`: every storage an op creates during the forward is watched (a TorchDispatchMode keeps a
weak reference to it); what is still alive after the forward, apart from the loss, is what the step
holds for backward. Parameters, buffers and the batch existed before the forward and are not counted.
`profiler_bytes`: torch.profiler's CPU memory accounting (profile_memory=True): bytes allocated and not
freed by the end of the forward (less anything allocated before it and freed during it).
Both then run the backward, so the step is a real one.

Run as a script (`python groundtruth.py FACTORY CONFIG_JSON`) so that torch runs in a child of the test
process, never in it: CONFIG is {"configure": "as-configured" | "none" | "blocks" | "code", "names": [...],
"code": "..."}, or {"hf_config": {...}, "batch": [b, s]}; it prints {"held": ..., "profiled": ...}.
"""

from __future__ import annotations

import gc
import weakref
from typing import Any

import torch
from torch.utils._python_dispatch import TorchDispatchMode
from torch.utils._pytree import tree_leaves


def forward_loss(model: torch.nn.Module, batch: Any) -> torch.Tensor:
    output = model(**batch) if isinstance(batch, dict) else model(batch)
    loss = getattr(output, "loss", None)
    if isinstance(loss, torch.Tensor):
        return loss
    return output if output.dim() == 0 else output.float().sum()  # as the probe does for a bare output


class _Watch(TorchDispatchMode):
    def __init__(self) -> None:
        super().__init__()
        self.created: dict[int, tuple[Any, int]] = {}

    def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
        out = func(*args, **(kwargs or {}))
        for leaf in tree_leaves(out):
            if isinstance(leaf, torch.Tensor):
                storage = leaf.untyped_storage()
                # a key freed earlier may come back for a new storage: the newest one is the one to watch
                self.created[storage._cdata] = (weakref.ref(storage), storage.nbytes())
        return out


def held_bytes(model: torch.nn.Module, batch: Any) -> int:
    before = {t.untyped_storage()._cdata for t in [*model.parameters(), *model.buffers(), *tree_leaves(batch)]
              if isinstance(t, torch.Tensor)}
    watch = _Watch()
    with watch:
        loss = forward_loss(model, batch)
    gc.collect()
    keep = loss.untyped_storage()._cdata
    held = sum(size for key, (ref, size) in watch.created.items()
               if ref() is not None and key not in before and key != keep)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return held


def profiler_bytes(model: torch.nn.Module, batch: Any) -> int:
    from torch.profiler import ProfilerActivity, profile

    gc.collect()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True) as prof:
        loss = forward_loss(model, batch)
        loss_bytes = loss.untyped_storage().nbytes()
    # top-level events: each op counts what it allocated and freed inside (children included), and the
    # bare "[memory]" events are the frees of tensors Python let go of between ops
    net = sum(e.cpu_memory_usage for e in prof.events() if e.cpu_parent is None)
    loss.backward()
    model.zero_grad(set_to_none=True)
    return net - loss_bytes


def checkpoint_blocks(model: torch.nn.Module, names: list[str]) -> None:
    """Checkpoint the named blocks for real (non-reentrant checkpoint_wrapper)."""
    from functools import partial

    from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import (
        CheckpointImpl,
        apply_activation_checkpointing,
        checkpoint_wrapper,
    )

    chosen = {model.get_submodule(n) for n in names}
    apply_activation_checkpointing(
        model, checkpoint_wrapper_fn=partial(checkpoint_wrapper, checkpoint_impl=CheckpointImpl.NO_REENTRANT),
        check_fn=lambda m: m in chosen)


def clean(model: torch.nn.Module) -> torch.nn.Module:
    """The model with the checkpointing its code configures removed."""
    import factories

    for sub in model.modules():
        if isinstance(sub, factories.Block):
            sub.mode = "none"
    if getattr(model, "is_activation_checkpointing", False):
        model.activation_checkpointing_disable()
    elif not hasattr(model, "is_activation_checkpointing") and getattr(model, "is_gradient_checkpointing", False):
        model.gradient_checkpointing_disable()  # transformers < 5.23
    return model


def _build(factory: str, config: dict[str, Any]) -> tuple[torch.nn.Module, Any]:
    if "hf_config" in config:
        from transformers import LlamaConfig, LlamaForCausalLM

        model = LlamaForCausalLM(LlamaConfig(**config["hf_config"])).train()
        ids = torch.zeros(*config["batch"], dtype=torch.long)
        return model, {"input_ids": ids, "labels": ids}
    import factories

    model, batch = getattr(factories, factory)()
    how = config.get("configure", "as-configured")
    if how == "none":
        clean(model)
    elif how == "blocks":
        checkpoint_blocks(clean(model), config["names"])
    elif how == "code":
        exec(config["code"], {"model": clean(model)})
    return model, batch


def main(argv: list[str]) -> int:
    import json
    import os
    import sys

    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    factory, config = argv[1], json.loads(argv[2])
    held = held_bytes(*_build(factory, config))
    profiled = profiler_bytes(*_build(factory, config))
    print(json.dumps({"held": held, "profiled": profiled}))
    return 0


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv))
