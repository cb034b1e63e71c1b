"""PEFT injects the adapters into the model it is given: a helper that wraps its argument and returns
nothing still leaves the caller's model with adapters behind frozen embeddings."""
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def add_lora(model):
    peft_model = get_peft_model(model, LoraConfig(r=8, target_modules=["c_attn"]))
    peft_model.print_trainable_parameters()


def main():
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    add_lora(model)
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
