"""What torch's layer checkpoint wrapper does to a transformers causal LM whose KV cache is on in training.

`apply_activation_checkpointing(model, check_fn=<decoder layer>)` (torch's non-reentrant `checkpoint_wrapper`,
what FSDP recipes, Accelerate's `fsdp_activation_checkpointing` and Lightning's policy apply) recomputes each
decoder layer in backward; with `use_cache=True` (the config default of causal LMs) the recomputation writes
the KV cache a second time (8 cached tokens become 16). Prints one JSON line: for SDPA and eager attention,
without and with a padding mask, "ok" or the error the backward raised; and whether the gradients equal an
unwrapped model's. Run with each transformers to compare (kv_cache_wrapper.txt: the runs behind the facts
table's transformers.checkpoint-wrapper-kv-cache rows; tests/stack/test_matrix.py runs it on each column)."""
import json
import warnings

import torch
import transformers
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

warnings.simplefilter("ignore")
transformers.logging.set_verbosity_error()
ids = torch.randint(1, 64, (2, 8), generator=torch.Generator().manual_seed(1))
padded = torch.ones(2, 8, dtype=torch.long)
padded[1, :3] = 0


def grads(attention: str, mask: torch.Tensor | None, wrap: bool, use_cache: bool) -> torch.Tensor:
    torch.manual_seed(0)
    config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                         num_attention_heads=2, num_key_value_heads=2,
                         attn_implementation=attention)  # type: ignore[call-arg]  # a PretrainedConfig kwarg
    model = LlamaForCausalLM(config).train()
    if wrap:
        apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
    model(input_ids=ids, attention_mask=mask, labels=ids, use_cache=use_cache).loss.backward()
    return torch.cat([p.grad.flatten() for p in model.parameters() if p.grad is not None])


seen: dict[str, object] = {"transformers": transformers.__version__}
for attention in ("sdpa", "eager"):
    for name, mask in (("unpadded", None), ("padded", padded)):
        try:
            same = torch.allclose(grads(attention, mask, True, True), grads(attention, mask, False, False))
            seen[f"{attention}-{name}"] = "ok" if same else "ok, other gradients"
        except (RuntimeError, torch.utils.checkpoint.CheckpointError) as error:
            seen[f"{attention}-{name}"] = f"{type(error).__name__}: {str(error).splitlines()[0]}"
        assert torch.allclose(grads(attention, mask, True, False), grads(attention, mask, False, False))
print(json.dumps(seen))
