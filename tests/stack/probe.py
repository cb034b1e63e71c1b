"""Run with the interpreter of one column of the version matrix: what transformers/torch really do there.

Prints one JSON object (the observations tests/stack/test_matrix.py compares with the version-facts table).
Needs torch and transformers; no network, no downloads (a tiny randomly initialised Llama).
"""

from __future__ import annotations

import inspect
import json
import warnings

import torch
import transformers
from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedModel, TrainingArguments


def tiny(layers: int = 2) -> LlamaForCausalLM:
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=layers,
                         num_attention_heads=2, num_key_value_heads=2, max_position_embeddings=32)
    return LlamaForCausalLM(config)


def checkpoint_kwargs(model: torch.nn.Module) -> list[dict[str, object]]:
    """The keywords each checkpointed layer's checkpoint function was bound with (functools.partial)."""
    found = []
    for module in model.modules():
        if getattr(module, "gradient_checkpointing", False) and hasattr(module, "_gradient_checkpointing_func"):
            found.append(dict(getattr(module._gradient_checkpointing_func, "keywords", {})))
    return found


def enable(model: torch.nn.Module, **kwargs: object) -> list[str]:
    """Enable with the old name (it exists on every version); the warnings it printed."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        model.gradient_checkpointing_enable(**kwargs)
    return [f"{w.category.__name__}: {w.message}" for w in caught]


def raised(run: object) -> str | None:
    """The message of the TypeError/ValueError `run()` raised; None when it ran."""
    assert callable(run)
    try:
        run()
    except (TypeError, ValueError) as exc:
        return f"{type(exc).__name__}: {exc}"
    return None


def old_kwargs_field() -> dict[str, object]:
    """What the Trainer would read after the old kwargs field is changed once the arguments exist, the way
    TRL's SFTTrainer forces `use_reentrant=True` for PEFT + ZeRO-3 (trl/trainer/sft_trainer.py:887-895,
    1.16.0): a fresh dict when none was given, else a change inside the given one."""
    import tempfile

    read = "activation_checkpointing_kwargs" if "activation_checkpointing_kwargs" in \
        TrainingArguments.__dataclass_fields__ else "gradient_checkpointing_kwargs"
    seen: dict[str, object] = {}
    for case, given in (("unset", None), ("set", {"use_reentrant": False})):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            args = TrainingArguments(output_dir=tempfile.mkdtemp(), gradient_checkpointing=True,
                                     gradient_checkpointing_kwargs=given, use_cpu=True, report_to=[])
        if args.gradient_checkpointing_kwargs:
            args.gradient_checkpointing_kwargs["use_reentrant"] = True
        else:
            args.gradient_checkpointing_kwargs = {"use_reentrant": True}
        seen[case] = getattr(args, read)
    return seen


def main() -> None:
    out: dict[str, object] = {"transformers": transformers.__version__, "torch": torch.__version__}

    model = tiny()
    out["enable_warnings"] = enable(model)
    kwargs = checkpoint_kwargs(model)
    out["default_use_reentrant"] = [k.get("use_reentrant") for k in kwargs]
    out["input_grads"] = hasattr(model, "_require_grads_hook")
    for p in model.parameters():
        p.requires_grad_(False)
    out["embedding_output_requires_grad"] = bool(model.get_input_embeddings()(torch.tensor([[1, 2]])).requires_grad)

    out["names"] = {
        "activation_checkpointing_enable": hasattr(model, "activation_checkpointing_enable"),
        "is_activation_checkpointing": hasattr(type(model), "is_activation_checkpointing"),
        "training_args_activation_checkpointing": "activation_checkpointing" in TrainingArguments.__dataclass_fields__,
    }
    params = inspect.signature(model.gradient_checkpointing_enable).parameters
    new = getattr(model, "activation_checkpointing_enable", None)
    new_params = inspect.signature(new).parameters if new is not None else {}
    out["every_n_layers"] = "every_n_layers" in params or "every_n_layers" in new_params
    out["offload"] = "offload" in params or "offload" in new_params
    if new is not None:
        four = tiny(layers=4)
        four.activation_checkpointing_enable(every_n_layers=2)
        out["every_n_layers_checkpointed"] = sum(
            bool(getattr(layer, "gradient_checkpointing", False)) for layer in four.model.layers)

    class NoCheckpointing(PreTrainedModel):
        config_class = LlamaConfig
        supports_gradient_checkpointing = False

        def __init__(self, config: LlamaConfig) -> None:
            super().__init__(config)
            self.linear = torch.nn.Linear(4, 4)

    try:
        enable(NoCheckpointing(LlamaConfig(num_hidden_layers=1, hidden_size=8, intermediate_size=8,
                                           num_attention_heads=1, vocab_size=8)))
        out["unsupported_message"] = None
    except ValueError as exc:
        out["unsupported_message"] = str(exc)

    out["old_kwargs_field"] = old_kwargs_field()

    from torch.utils.checkpoint import checkpoint

    x = torch.ones(2, 2, requires_grad=True)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        checkpoint(torch.sin, x)
    out["torch_missing_use_reentrant"] = [str(w.message) for w in caught]
    try:
        checkpoint(lambda a, scale=1.0: a * scale, x, use_reentrant=True, scale=2.0)
        out["torch_reentrant_kwargs"] = None
    except ValueError as exc:
        out["torch_reentrant_kwargs"] = str(exc)
    out["torch_respect_saved_tensors_hooks"] = raised(
        lambda: checkpoint(torch.sin, x, use_reentrant=True, respect_saved_tensors_hooks=True))
    out["torch_curried"] = raised(lambda: checkpoint(use_reentrant=False)(torch.sin)(x))
    try:
        from peft import prepare_model_for_kbit_training
    except ImportError:
        out["peft_kbit_kwargs"] = None
    else:
        kbit = tiny()
        kbit.is_loaded_in_8bit = True  # what a bitsandbytes-loaded model reports; PEFT reads only the flag
        with warnings.catch_warnings(record=True):
            warnings.simplefilter("always")
            prepare_model_for_kbit_training(kbit)
        out["peft_kbit_kwargs"] = checkpoint_kwargs(kbit)
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            kbit.train()
            kbit(input_ids=torch.tensor([[1, 2, 3]]), labels=torch.tensor([[1, 2, 3]])).loss.backward()
        out["peft_kbit_warnings"] = sorted({str(w.message)[:61] for w in caught if "use_reentrant" in str(w.message)})
    print(json.dumps(out))


if __name__ == "__main__":
    main()
