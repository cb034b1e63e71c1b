"""The order of freeze / enable checkpointing / attach adapters decides whether the adapters train."""
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM

config = LoraConfig(r=8, target_modules=["q_proj", "v_proj"])


def adapters_after_enable(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    model.add_adapter(config)  # violation: attached after checkpointing was enabled
    return model


def adapters_before_enable(name):
    model = AutoModelForCausalLM.from_pretrained(name)
    model.add_adapter(config)  # near miss: transformers prepares the inputs for loaded adapters
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
    return model
