"""Near miss: LoRA in one arm of an `if`, plain checkpointing of the full model in the other (the shape of
open-instruct's finetune.py and dpo_tune_cache.py). Only one arm runs: the checkpointed model in the `elif`
has no adapters and trains all its parameters. In a loop both arms could run, one after the other: reported."""
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def main(use_lora: bool, gradient_checkpointing: bool):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    if use_lora:
        model = get_peft_model(model, LoraConfig(r=8, target_modules=["c_attn"]))
        model.print_trainable_parameters()
    elif gradient_checkpointing:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})


def stages(plans):
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    for lora in plans:
        if lora:
            model = get_peft_model(model, LoraConfig(r=8, target_modules=["c_attn"]))
        else:
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
