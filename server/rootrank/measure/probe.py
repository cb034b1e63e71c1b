"""The measuring side of `rootrank measure`: a script run by the user's interpreter, never imported.

It is the only part of rootrank that imports torch (and transformers), and it imports nothing of
rootrank: the engine starts it as `python probe.py REQUEST_JSON` with the interpreter that has torch,
and reads JSON lines from its stdout (`progress`, then one `result` or one `error`). Anything the user's
code prints goes to stderr.

What it measures is facts, not configurations: one forward with every checkpoint call run plainly
(`CheckpointFunction` and the non-reentrant generator of `torch.utils.checkpoint` are swapped for
pass-through versions while it runs), under `saved_tensors_hooks` that record each storage saved for
backward once (parameters, buffers and the example batch excluded: they are held either way) together
with the scopes (blocks, checkpoint regions) active when it was saved, and the tensors each scope takes
as inputs. For a transformers layer it also records what transformers' own checkpointing would keep: the
arguments its layer wrapper passes to the checkpoint function (KV cache dropped), found by running the
wrapper with a checkpoint function that records them and computes nothing (`transformers_call`).
A second forward+backward under `FlopCounterMode` gives the FLOPs per scope and of the step.
From these records the engine computes the activation memory of any set of checkpointed scopes.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import json
import os
import sys
import time
import traceback
from typing import Any

PROTOCOL = "rootrank.measure-probe/1"
_OUT: Any = None


def emit(message_type: str, **fields: Any) -> None:
    _OUT.write(json.dumps({"type": message_type, **fields}) + "\n")
    _OUT.flush()


class ProbeError(Exception):
    def __init__(self, kind: str, message: str, detail: str = "") -> None:
        super().__init__(message)
        self.kind = kind
        self.detail = detail


# --------------------------------------------------------------------------- building the model


def _user_frames(exc: BaseException) -> str:
    """The traceback of a failing factory, without this script's frames and the libraries' frames
    above the user's last one."""
    here = os.path.abspath(__file__)
    frames = [f for f in traceback.extract_tb(exc.__traceback__) if os.path.abspath(f.filename) != here]

    def library(filename: str) -> bool:
        parts = filename.replace("\\", "/")
        return "/site-packages/" in parts or "/dist-packages/" in parts or parts.startswith("<frozen")

    while frames and library(frames[-1].filename) and any(not library(f.filename) for f in frames):
        frames.pop()
    lines = traceback.format_list(frames) + traceback.format_exception_only(type(exc), exc)
    return "Traceback (most recent call last):\n" + "".join(lines).rstrip()


def build_from_factory(target: str, device: str) -> tuple[Any, Any]:
    import torch

    module_name, _, attr = target.partition(":")
    if not module_name or not attr:
        raise ProbeError("bad-target", f"{target!r} is not MODULE:FACTORY (e.g. mypkg.model:build)")
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as exc:
        if exc.name and (module_name == exc.name or module_name.startswith(exc.name + ".")):
            raise ProbeError("unknown-module", f"no module named {exc.name!r} (looked in {os.getcwd()} "
                             f"and the interpreter's path)") from None
        raise ProbeError("factory-raised", f"importing {module_name} failed: {exc}", _user_frames(exc)) from None
    except Exception as exc:
        raise ProbeError("factory-raised", f"importing {module_name} failed: {type(exc).__name__}: {exc}",
                         _user_frames(exc)) from None
    factory: Any = module
    for part in attr.split("."):
        if not hasattr(factory, part):
            raise ProbeError("unknown-factory", f"module {module_name} has no attribute {attr!r}")
        factory = getattr(factory, part)
    if not callable(factory):
        raise ProbeError("unknown-factory", f"{target} is not callable")
    try:
        with torch.device(device) if device != "cpu" else contextlib.nullcontext():
            built = factory()
    except Exception as exc:
        raise ProbeError("factory-raised", f"{target}() raised {type(exc).__name__}: {exc}",
                         _user_frames(exc)) from None
    if not (isinstance(built, (tuple, list)) and len(built) == 2 and isinstance(built[0], torch.nn.Module)):
        raise ProbeError("bad-factory-result", f"{target}() must return (model, example_batch) with an "
                         f"nn.Module first; it returned {type(built).__name__}")
    model, batch = built
    if device != "cpu":
        model = model.to(device)
        batch = _to_device(batch, device)
    return model, batch


def _to_device(batch: Any, device: str) -> Any:
    import torch
    from torch.utils._pytree import tree_map

    return tree_map(lambda x: x.to(device) if isinstance(x, torch.Tensor) else x, batch)


def build_from_hf_config(path: str, batch_size: int, seq_len: int, device: str, dtype: str | None) -> tuple[Any, Any]:
    import torch

    try:
        import transformers
    except ImportError as exc:
        raise ProbeError("no-transformers", f"transformers cannot be imported by {sys.executable}: {exc}") from None
    if os.path.isdir(path):
        path = os.path.join(path, "config.json")
    try:
        with open(path, encoding="utf-8") as handle:
            data = json.load(handle)
    except (OSError, ValueError) as exc:
        raise ProbeError("bad-config", f"cannot read {path}: {exc}") from None
    if not isinstance(data, dict) or "model_type" not in data:
        raise ProbeError("bad-config", f"{path} is not a transformers config (no model_type)")
    try:
        config = transformers.AutoConfig.for_model(**data)
    except Exception as exc:
        raise ProbeError("bad-config", f"transformers does not know this config: {type(exc).__name__}: {exc}") from None
    want = dtype or _config_dtype(config)
    torch_dtype = getattr(torch, want) if want else None
    if torch_dtype is not None and not isinstance(torch_dtype, torch.dtype):
        raise ProbeError("bad-config", f"unknown dtype {want!r}")
    auto: Any = transformers.AutoModelForCausalLM
    if type(config) not in auto._model_mapping:
        auto = transformers.AutoModel
    try:
        with torch.device(device):
            model = auto.from_config(config)
        if torch_dtype is not None:
            model = model.to(torch_dtype)
    except Exception as exc:
        raise ProbeError("factory-raised", f"building {type(config).__name__} failed: {type(exc).__name__}: {exc}",
                         _user_frames(exc)) from None
    model.train()
    vocab = int(getattr(config, "vocab_size", 0) or 2)
    ids = torch.randint(0, vocab, (batch_size, seq_len), device=device)
    batch: dict[str, Any] = {"input_ids": ids}
    if auto is transformers.AutoModelForCausalLM:
        batch["labels"] = ids
    return model, batch


def _config_dtype(config: Any) -> str | None:
    value = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    if value is None:
        return None
    return str(value).replace("torch.", "")


# --------------------------------------------------------------------------- the module tree


def _unwrapped(module: Any) -> Any:
    while hasattr(module, "_checkpoint_wrapped_module"):
        module = module._checkpoint_wrapped_module
    return module


def detect_blocks(model: Any) -> tuple[str, list[tuple[str, Any]]]:
    """The repeated blocks: the children of one module that share a class (seen through
    checkpoint_wrapper) and hold the most parameters; else the top-level children."""
    best: tuple[int, int, int] | None = None
    chosen: list[tuple[str, Any]] = []
    for name, module in model.named_modules():
        groups: dict[type, list[tuple[str, Any]]] = {}
        for child_name, child in module.named_children():
            groups.setdefault(type(_unwrapped(child)), []).append((f"{name}.{child_name}" if name else child_name, child))
        for members in groups.values():
            if len(members) < 2:
                continue
            params = sum(p.numel() for _, m in members for p in m.parameters())
            key = (params, len(members), -name.count("."))
            if best is None or key > best:
                best, chosen = key, members
    if chosen:
        return "repeated", chosen
    children = [(n, m) for n, m in model.named_children()]
    if children:
        return "top-level", children
    return "whole-model", [("", model)]


# --------------------------------------------------------------------------- the recorder


class Recorder:
    """Scopes (blocks and checkpoint regions) and the storages saved inside them."""

    def __init__(self, excluded: set[int]) -> None:
        self.excluded = excluded
        self.stack: list[int] = []
        self.scopes: list[dict[str, Any]] = []
        self.storages: list[dict[str, Any]] = []
        self._sid: dict[int, int] = {}
        self._keep: list[Any] = []  # storages stay alive while recording, so their keys stay unique
        self._saves: set[tuple[int, tuple[int, ...]]] = set()
        self.flops: dict[int, int] = {}
        self._objects: list[tuple[int, Any, list[int]]] = []
        self.on_block_done: Any = None

    def storage_id(self, tensor: Any) -> int | None:
        storage = tensor.untyped_storage()
        key = storage._cdata
        if key in self.excluded:
            return None
        sid = self._sid.get(key)
        if sid is None:
            sid = self._sid[key] = len(self.storages)
            self.storages.append({"id": sid, "bytes": int(storage.nbytes()), "saves": []})
            self._keep.append(storage)
        return sid

    def pack(self, tensor: Any) -> Any:
        sid = self.storage_id(tensor)
        if sid is not None:
            stack = tuple(self.stack)
            if (sid, stack) not in self._saves:
                self._saves.add((sid, stack))
                self.storages[sid]["saves"].append(list(stack))
        return tensor

    def inputs(self, *trees: Any) -> list[int]:
        import torch
        from torch.utils._pytree import tree_leaves

        seen: list[int] = []
        for tree in trees:
            for leaf in tree_leaves(tree):
                if isinstance(leaf, torch.Tensor):
                    sid = self.storage_id(leaf)
                    if sid is not None and sid not in seen:
                        seen.append(sid)
                elif _holds_tensors(leaf):
                    # e.g. a KV cache: a checkpoint keeps it, and whatever it holds by the end of the forward
                    self._objects.append((len(self.scopes), leaf, seen))
        return seen

    def resolve_objects(self) -> None:
        """Add to each scope's inputs the tensors its object arguments hold once the forward is done."""
        import torch

        for _, obj, seen in self._objects:
            for tensor in _reachable_tensors(obj, torch.Tensor):
                sid = self.storage_id(tensor)
                if sid is not None and sid not in seen:
                    seen.append(sid)
        self._objects.clear()

    @contextlib.contextmanager
    def scope(self, record: dict[str, Any]) -> Any:
        record["id"] = len(self.scopes)
        record["parents"] = list(self.stack)
        self.scopes.append(record)
        self.stack.append(record["id"])
        try:
            yield record
        finally:
            self.stack.pop()


def _holds_tensors(value: Any) -> bool:
    """An argument object worth looking into: not a plain value, a module or a function."""
    import torch

    if value is None or isinstance(value, (bool, int, float, str, bytes, torch.dtype, torch.device, torch.nn.Module)):
        return False
    return hasattr(value, "__dict__") and not callable(value)


def _reachable_tensors(obj: Any, tensor_type: type, depth: int = 4) -> list[Any]:
    found: list[Any] = []
    stack = [(obj, 0)]
    visited: set[int] = set()
    while stack:
        value, level = stack.pop()
        if id(value) in visited or level > depth:
            continue
        visited.add(id(value))
        if isinstance(value, tensor_type):
            found.append(value)
        elif isinstance(value, dict):
            stack += [(v, level + 1) for v in value.values()]
        elif isinstance(value, (list, tuple, set)):
            stack += [(v, level + 1) for v in value]
        elif _holds_tensors(value):
            stack += [(v, level + 1) for v in vars(value).values()]
    return found


def _function_parameters(function: Any) -> list[Any]:
    """The parameters a checkpointed function runs with, when it is a module, a module's method or a
    partial of either."""
    import torch

    while isinstance(function, functools.partial):
        if function.args and isinstance(function.args[0], torch.nn.Module):
            return list(function.args[0].parameters())
        function = function.func
    owner = getattr(function, "__self__", None)
    if isinstance(function, torch.nn.Module):
        owner = function
    return list(owner.parameters()) if isinstance(owner, torch.nn.Module) else []


def _function_module(function: Any) -> Any:
    import torch

    while isinstance(function, functools.partial):
        if function.args and isinstance(function.args[0], torch.nn.Module):
            return function.args[0]
        function = function.func
    if isinstance(function, torch.nn.Module):
        return function
    owner = getattr(function, "__self__", None)
    return owner if isinstance(owner, torch.nn.Module) else None


def _call_site() -> str:
    """file:line of the code that called checkpoint (the first frame outside torch and this script)."""
    import torch

    frame: Any = sys._getframe(2)
    skip = (os.path.abspath(__file__), os.path.dirname(os.path.abspath(torch.__file__)) + os.sep)
    while frame is not None:
        name = os.path.abspath(frame.f_code.co_filename)
        if name != skip[0] and not name.startswith(skip[1]):
            return f"{name}:{frame.f_lineno}"
        frame = frame.f_back
    return "?"


@contextlib.contextmanager
def plain_checkpoints(rec: Recorder, names: dict[int, str]) -> Any:
    """Every torch.utils.checkpoint call runs its function plainly (as without checkpointing) while
    the recorder notes the region, its inputs and whether checkpointing would engage."""
    import torch
    import torch.utils.checkpoint as cp

    def region(function: Any, args: tuple[Any, ...], kwargs: dict[str, Any], reentrant: bool,
               selective: bool = False) -> Any:
        tensors = [t for t in _leaves((args, kwargs)) if isinstance(t, torch.Tensor)]
        inputs_require_grad = any(t.requires_grad for t in tensors)
        params = [p for p in _function_parameters(function) if p.requires_grad]
        held: tuple[Any, ...] = (args, kwargs)
        if isinstance(function, functools.partial):
            held = (args, kwargs, function.args, function.keywords)
        module = _function_module(function)
        grad = torch.is_grad_enabled()
        return rec.scope({
            "kind": "region", "reentrant": reentrant, "grad_enabled": grad, "selective": selective,
            "inputs": rec.inputs(*held), "inputs_require_grad": inputs_require_grad,
            "detached": bool(reentrant and grad and not inputs_require_grad),
            "parameters_without_grad": sum(p.numel() for p in params) if reentrant and not inputs_require_grad else 0,
            "module": names.get(id(_unwrapped(module))) if module is not None else None,
            "function": type(_unwrapped(module)).__name__ if module is not None
            else getattr(function, "__qualname__", type(function).__name__),
            "where": _call_site(),
        })

    class PlainFunction:
        @staticmethod
        def apply(function: Any, preserve: Any, *args: Any) -> Any:
            with region(function, args, {}, reentrant=True):
                return function(*args)

    def plain_generator(fn: Any, preserve_rng_state: bool = True, context_fn: Any = None,
                        determinism_check: Any = None, debug: bool = False, early_stop: bool = True,
                        *args: Any, **kwargs: Any) -> Any:
        selective = context_fn is not None and context_fn is not getattr(cp, "noop_context_fn", None)
        with region(fn, args, kwargs, reentrant=False, selective=selective):
            yield

    saved = cp.CheckpointFunction, cp._checkpoint_without_reentrant_generator
    module: Any = cp
    module.CheckpointFunction, module._checkpoint_without_reentrant_generator = PlainFunction, plain_generator
    try:
        yield
    finally:
        module.CheckpointFunction, module._checkpoint_without_reentrant_generator = saved


def _leaves(tree: Any) -> list[Any]:
    from torch.utils._pytree import tree_leaves

    return tree_leaves(tree)


class _CallCapturedError(Exception):
    """Raised by the capturing checkpoint function: transformers' wrapper got as far as its checkpoint call."""

    def __init__(self, function: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> None:
        super().__init__("captured")
        self.function, self.args, self.kwargs = function, args, kwargs


class _ComputeReachedError(Exception):
    """Raised when the dry call would run a tensor op: the layer's own code was reached, not its wrapper's call."""


def transformers_call(module: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> _CallCapturedError | None:
    """What transformers' own checkpointing of this layer (its `gradient_checkpointing` flag, set by
    `activation_checkpointing_enable` / `gradient_checkpointing_enable`) passes to its checkpoint function for
    this call: the layer's wrapper (a wrapped `forward` on transformers 5, an overridden `__call__` on 4.x) is
    run with the flag set and a checkpoint function that records its arguments and stops, so nothing is
    computed. The wrapper edits the keyword arguments first (`use_cache=False`, the KV cache dropped), so
    these, not the layer's call as the model makes it, are what such a checkpoint keeps. None when the layer
    has no such wrapper, or transformers would not checkpoint it here (eval mode, no grad)."""
    import torch
    from torch.utils._python_dispatch import TorchDispatchMode

    if not isinstance(getattr(module, "gradient_checkpointing", None), bool) or not module.training \
            or not torch.is_grad_enabled():
        return None

    def capture(function: Any, *call_args: Any, **call_kwargs: Any) -> Any:
        raise _CallCapturedError(function, call_args, call_kwargs)

    class NoCompute(TorchDispatchMode):
        # a layer whose wrapper does not route to the checkpoint function would run for real: stop at its first op
        def __torch_dispatch__(self, func: Any, types: Any, args: Any = (), kwargs: Any = None) -> Any:
            raise _ComputeReachedError(str(func))

    cls = type(module)
    entry = cls.__call__ if cls.__call__ is not torch.nn.Module.__call__ else cls.forward
    names = ("gradient_checkpointing", "_gradient_checkpointing_func")
    saved = {n: module.__dict__[n] for n in names if n in module.__dict__}
    module.gradient_checkpointing, module._gradient_checkpointing_func = True, capture
    try:
        with NoCompute():
            entry(module, *args, **kwargs)
    except _CallCapturedError as captured:
        return captured
    except _ComputeReachedError:
        return None
    finally:
        for n in names:
            if n in saved:
                setattr(module, n, saved[n])
            else:
                delattr(module, n)
    return None


@contextlib.contextmanager
def block_scopes(rec: Recorder, blocks: list[tuple[str, Any]], call_inputs: bool = False) -> Any:
    """A scope per block call, with the tensors it is called with; with `call_inputs`, also those that
    transformers' own checkpointing of the block would keep (`transformers_call`)."""
    import torch

    handles = []
    open_scopes: dict[int, list[Any]] = {}
    for index, (name, module) in enumerate(blocks):
        def pre(module: Any, args: Any, kwargs: Any, index: int = index, name: str = name) -> None:
            record: dict[str, Any] = {"kind": "block", "block": index, "inputs": rec.inputs(args, kwargs)}
            call = transformers_call(_unwrapped(module), args, kwargs) if call_inputs else None
            if call is not None:
                held: tuple[Any, ...] = (call.args, call.kwargs)
                if isinstance(call.function, functools.partial):
                    held += (call.function.args, call.function.keywords)
                record["call_inputs"] = rec.inputs(*held)
            scope = rec.scope(record)
            scope.__enter__()
            open_scopes.setdefault(index, []).append(scope)

        def post(module: Any, args: Any, kwargs: Any, output: Any, index: int = index) -> None:
            record = rec.scopes[rec.stack[-1]]
            record["output_requires_grad"] = any(
                t.requires_grad for t in _leaves(output) if isinstance(t, torch.Tensor))
            open_scopes[index].pop().__exit__(None, None, None)
            if rec.on_block_done is not None:
                rec.on_block_done(index)

        handles.append(module.register_forward_pre_hook(pre, with_kwargs=True))
        handles.append(module.register_forward_hook(post, with_kwargs=True, always_call=True))
    try:
        yield
    finally:
        for handle in handles:
            handle.remove()


def run_forward(model: Any, batch: Any) -> Any:
    """The loss of one training step: `output.loss` when the model computes one, else the sum of its
    floating-point outputs."""
    import torch

    if isinstance(batch, dict):
        output = model(**batch)
    elif isinstance(batch, (tuple, list)):
        output = model(*batch)
    else:
        output = model(batch)
    loss = getattr(output, "loss", None)
    if isinstance(output, dict):
        loss = output.get("loss", loss)
    if isinstance(loss, torch.Tensor):
        return loss
    terms = [t.float().sum() for t in _leaves(output if not hasattr(output, "to_tuple") else output.to_tuple())
             if isinstance(t, torch.Tensor) and t.is_floating_point() and t.requires_grad]
    if not terms:
        raise ProbeError("no-loss", "the model's output has no loss and no floating-point tensor that requires "
                         "grad: nothing is saved for backward (is every parameter frozen?)")
    return torch.stack(terms).sum() if len(terms) > 1 else terms[0]


# --------------------------------------------------------------------------- the measurement


def measure(request: dict[str, Any]) -> dict[str, Any]:
    try:
        import torch
    except ImportError as exc:
        raise ProbeError("no-torch", f"torch cannot be imported by {sys.executable}: {exc}") from None
    from torch.utils.flop_counter import FlopCounterMode

    device = request.get("device") or "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        raise ProbeError("no-device", "--device cuda: torch.cuda.is_available() is False in this interpreter")
    emit("progress", message="building the model", done=0, total=0)
    if request.get("hf_config"):
        model, batch = build_from_hf_config(request["hf_config"], int(request.get("batch_size") or 1),
                                            int(request.get("seq_len") or 512), device, request.get("dtype"))
    else:
        model, batch = build_from_factory(request["target"], device)
    detection, blocks = detect_blocks(model)
    names = {id(_unwrapped(m)): n for n, m in model.named_modules()}
    excluded = {t.untyped_storage()._cdata for t in [*model.parameters(), *model.buffers()]}
    excluded |= {t.untyped_storage()._cdata for t in _leaves(batch) if isinstance(t, torch.Tensor)}
    total_steps = 2 * len(blocks)
    done = [0]

    def progress(stage: str) -> Any:
        def step(index: int) -> None:
            done[0] += 1
            emit("progress", message=f"{stage}: {blocks[index][0] or 'model'}", done=done[0], total=total_steps)
        return step

    # 1. memory: what is saved for backward, and where
    rec = Recorder(excluded)
    rec.on_block_done = progress("activations")
    with plain_checkpoints(rec, names), block_scopes(rec, blocks, call_inputs=True), \
            torch.autograd.graph.saved_tensors_hooks(rec.pack, lambda t: t):
        loss = run_forward(model, batch)
    rec.resolve_objects()
    scopes, storages = rec.scopes, rec.storages
    del loss, rec

    # 2. FLOPs per scope (forward) and of the step (forward + backward), with torch's FLOP formulas
    frec = Recorder(excluded)
    frec.on_block_done = progress("flops")
    forward_flops: dict[int, int] = {}
    total = {"forward": 0}

    class ScopedFlopCounter(FlopCounterMode):
        def _count_flops(self, func_packet: Any, out: Any, args: Any, kwargs: Any) -> Any:
            if func_packet in self.flop_registry and frec.stack is not None:
                count = int(self.flop_registry[func_packet](*args, **kwargs, out_val=out))
                for sid in set(frec.stack):
                    forward_flops[sid] = forward_flops.get(sid, 0) + count
            return super()._count_flops(func_packet, out, args, kwargs)

    counter = ScopedFlopCounter(display=False)
    with counter:
        with plain_checkpoints(frec, names), block_scopes(frec, blocks):
            loss = run_forward(model, batch)
        total["forward"] = int(counter.get_total_flops())
        loss.backward()
    step_flops = int(counter.get_total_flops())
    del loss
    if len(frec.scopes) == len(scopes):
        for scope in scopes:
            scope["forward_flops"] = forward_flops.get(scope["id"], 0)
    model.zero_grad(set_to_none=True)

    hf = None
    if hasattr(model, "supports_gradient_checkpointing"):
        hf = {"supports": bool(getattr(model, "supports_gradient_checkpointing", False)),
              "flag_set": any(bool(getattr(m, "gradient_checkpointing", False)) for m in model.modules()),
              "enable": "activation_checkpointing_enable" if hasattr(model, "activation_checkpointing_enable")
              else "gradient_checkpointing_enable",
              "use_cache": bool(getattr(getattr(model, "config", None), "use_cache", False))}
    result: dict[str, Any] = {
        "protocol": PROTOCOL,
        "python": sys.executable,
        "torch": torch.__version__.split("+")[0],
        "transformers": _version("transformers"),
        "device": device,
        "model": {
            "class": type(model).__name__,
            "training": bool(model.training),
            "parameters": sum(p.numel() for p in model.parameters()),
            "parameter_bytes": sum(p.numel() * p.element_size() for p in model.parameters()),
            "dtype": str(next(iter(model.parameters())).dtype).replace("torch.", "") if any(True for _ in model.parameters()) else None,
            "hf": hf,
            "attention": getattr(getattr(model, "config", None), "_attn_implementation", None),
        },
        "batch": _describe(batch),
        "detection": detection,
        "blocks": [{"index": i, "name": n, "class": type(_unwrapped(m)).__name__,
                    "parameters": sum(p.numel() for p in m.parameters()),
                    "training": bool(m.training),
                    "hf_flag": getattr(_unwrapped(m), "gradient_checkpointing", None)}
                   for i, (n, m) in enumerate(blocks)],
        "scopes": scopes,
        "storages": storages,
        "flops": {"forward": total["forward"], "step": step_flops},
    }
    if device == "cuda":
        result["cuda"] = measure_cuda(model, batch, blocks)
    return result


def measure_cuda(model: Any, batch: Any, blocks: list[tuple[str, Any]]) -> dict[str, Any]:
    """Real peak memory and step time: as configured, without any checkpointing, every block checkpointed."""
    import torch
    from torch.utils.checkpoint import checkpoint

    def step() -> None:
        loss = run_forward(model, batch)
        loss.backward()
        model.zero_grad(set_to_none=True)

    def timed(label: str, context: Any) -> dict[str, Any]:
        emit("progress", message=f"timing on cuda: {label}", done=0, total=0)
        with context():
            step()  # warm-up
            torch.cuda.synchronize()
            torch.cuda.reset_peak_memory_stats()
            base = torch.cuda.memory_allocated()
            start = time.perf_counter()
            steps = 3
            for _ in range(steps):
                step()
            torch.cuda.synchronize()
            elapsed = (time.perf_counter() - start) / steps
        return {"peak_bytes": int(torch.cuda.max_memory_allocated() - base), "step_seconds": elapsed}

    @contextlib.contextmanager
    def none() -> Any:
        rec = Recorder(set())
        with plain_checkpoints(rec, {}):
            yield

    @contextlib.contextmanager
    def every_block() -> Any:
        saved = []
        for _, module in blocks:
            forward = module.forward
            saved.append((module, forward))
            module.forward = functools.partial(checkpoint, forward, use_reentrant=False)
        try:
            yield
        finally:
            for module, forward in saved:
                module.forward = forward

    return {"as_configured": timed("as configured", contextlib.nullcontext),
            "none": timed("without checkpointing", none),
            "all_blocks": timed("every block checkpointed", every_block),
            "name": torch.cuda.get_device_name()}


def _describe(batch: Any) -> list[dict[str, Any]]:
    import torch

    return [{"shape": list(t.shape), "dtype": str(t.dtype).replace("torch.", "")}
            for t in _leaves(batch) if isinstance(t, torch.Tensor)]


def _version(name: str) -> str | None:
    try:
        from importlib.metadata import version

        return version(name)
    except Exception:
        return None


def main(argv: list[str]) -> int:
    global _OUT
    # The protocol owns the real stdout; whatever the user's code prints goes to stderr.
    _OUT = os.fdopen(os.dup(1), "w", encoding="utf-8")
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    try:
        request = json.loads(argv[1]) if len(argv) > 1 else json.load(sys.stdin)
        for entry in reversed(request.get("path") or []):
            if entry not in sys.path:
                sys.path.insert(0, entry)
        emit("result", data=measure(request))
        return 0
    except ProbeError as exc:
        emit("error", kind=exc.kind, message=str(exc), detail=exc.detail)
        return 3
    except KeyboardInterrupt:
        return 130
    except Exception as exc:
        emit("error", kind="probe-failed", message=f"{type(exc).__name__}: {exc}",
             detail="".join(traceback.format_exception(type(exc), exc, exc.__traceback__)))
        return 3


if __name__ == "__main__":
    sys.exit(main(sys.argv))
