"""LoRA dropout inside checkpointed decoder layers, the RNG state not preserved (FSDP-style wrapper)."""
import functools

from peft import LoraConfig, get_peft_model
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import checkpoint_wrapper

config = LoraConfig(r=16, lora_alpha=32, lora_dropout=0.05, target_modules=["q_proj", "v_proj"])


def wrap(model):
    model = get_peft_model(model, config)
    for i, layer in enumerate(model.base_model.model.model.layers):
        model.base_model.model.model.layers[i] = checkpoint_wrapper(layer, preserve_rng_state=False)  # violation
    return model
