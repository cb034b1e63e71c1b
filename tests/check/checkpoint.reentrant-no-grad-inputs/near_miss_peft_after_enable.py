"""near miss: get_peft_model runs after gradient checkpointing is on, so PEFT makes the inputs require
grad itself (peft 0.21.2 peft_model.py:184)."""
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def build(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model = get_peft_model(model, LoraConfig(r=8))
    return model
