"""Why transformers' own checkpointing of the tiny Llama holds less than torch's `checkpoint_wrapper` on
the same layers (issue #13; the output of one run is hf_call_vs_wrapper.txt beside this script).

For each set-up (`wrapper`: apply_activation_checkpointing on layers 0 and 2; `hf`:
model.activation_checkpointing_enable(every_n_layers=2)) it prints
- what each call of torch.utils.checkpoint.checkpoint receives: its positional and keyword arguments and
  those bound in a functools.partial (tensors by storage size, other objects by type);
- the storages saved for backward outside the checkpoints, counted under saved_tensors_hooks (each storage
  once, with the number of saves);
- the bytes still alive after the forward (what the step holds for backward: tests/measure/groundtruth.py).
Run: PYTHONPATH=server python tests/measure/evidence/hf_call_vs_wrapper.py
"""

from __future__ import annotations

import functools
import os
import sys
from collections import Counter
from typing import Any

import torch
import torch.utils.checkpoint as cp
from torch.utils._pytree import tree_leaves

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
import factories
import groundtruth


def describe(value: Any) -> str:
    if isinstance(value, torch.Tensor):
        return f"tensor{list(value.shape)} ({value.untyped_storage().nbytes()} B)"
    if isinstance(value, torch.nn.Module):
        return type(value).__name__
    return repr(value) if value is None or isinstance(value, (bool, int, float, str)) else type(value).__name__


def run(setup: str) -> None:
    model, batch = factories.tiny_llama()
    if setup == "wrapper":
        groundtruth.checkpoint_blocks(model, ["model.layers.0", "model.layers.2"])
    else:
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False},
                                              every_n_layers=2)
    original = cp.checkpoint
    calls: list[str] = []

    def recording(function: Any, *args: Any, **kwargs: Any) -> Any:
        bound: dict[str, Any] = dict(function.keywords) if isinstance(function, functools.partial) else {}
        passed = {k: v for k, v in kwargs.items() if k not in ("use_reentrant", "preserve_rng_state")}
        calls.append(f"  checkpoint(args={[describe(a) for a in args]}, kwargs="
                     f"{ {k: describe(v) for k, v in {**bound, **passed}.items()} })")
        return original(function, *args, **kwargs)

    saves: Counter[int] = Counter()
    sizes: dict[int, int] = {}
    excluded = {t.untyped_storage()._cdata for t in [*model.parameters(), *model.buffers(), *tree_leaves(batch)]}

    def pack(tensor: torch.Tensor) -> torch.Tensor:
        storage = tensor.untyped_storage()
        if storage._cdata not in excluded:
            saves[storage._cdata] += 1
            sizes[storage._cdata] = storage.nbytes()
        return tensor

    # the wrapper looks checkpoint up in its partial, transformers in its module: patch both names
    import transformers.modeling_utils as mu
    from torch.distributed.algorithms._checkpoint import checkpoint_wrapper as cw

    patched = [(cp, "checkpoint"), (mu, "checkpoint"), (cw, "torch_utils_checkpoint")]
    saved = [getattr(m, n) for m, n in patched]
    for m, n in patched:
        setattr(m, n, recording)
    for module in model.modules():
        fn = getattr(module, "checkpoint_fn", None)
        if isinstance(fn, functools.partial):
            module.checkpoint_fn = functools.partial(recording, *fn.args, **fn.keywords)
        fn = getattr(module, "_gradient_checkpointing_func", None)
        if isinstance(fn, functools.partial):
            module._gradient_checkpointing_func = functools.partial(recording, *fn.args, **fn.keywords)
    try:
        with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
            loss = groundtruth.forward_loss(model, batch)
        loss.backward()
    finally:
        for (m, n), value in zip(patched, saved, strict=True):
            setattr(m, n, value)
    print(f"{setup}:")
    print("\n".join(calls))
    print(f"  saved for backward outside the checkpoints: {len(saves)} storages, {sum(sizes.values())} bytes, "
          f"{sum(saves.values())} saves")
    model2, batch2 = factories.tiny_llama()
    if setup == "wrapper":
        groundtruth.checkpoint_blocks(model2, ["model.layers.0", "model.layers.2"])
    else:
        model2.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False},
                                               every_n_layers=2)
    print(f"  held for backward after the forward: {groundtruth.held_bytes(model2, batch2)} bytes")


if __name__ == "__main__":
    import transformers

    print(f"torch {torch.__version__}, transformers {transformers.__version__}")
    for setup in ("wrapper", "hf"):
        run(setup)
