"""near misses: the cache turned back on for generation after training, and a forward with the cache in
another function than the one that enables checkpointing (a test of the inference path)."""
import torch
from transformers import AutoModelForCausalLM


def train(model):
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
    model.config.use_cache = False
    model.train()
    # ... training ...
    model.config.use_cache = True  # near miss: generation comes next
    model.eval()
    return model.generate(torch.tensor([[1, 2, 3]]), max_new_tokens=8)


def prefill(model, ids):
    return model(input_ids=ids, use_cache=True)  # near miss: not the checkpointed training code
