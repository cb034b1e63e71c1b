"""Near miss: `get_peft_model` in one function, reentrant checkpointing of another model in another. The
first keeps its PEFT model to itself (returns nothing, stores it nowhere, wraps no model it was given), so
the second model has no adapters behind frozen inputs. A helper that returns its PEFT model, or wraps the
model it is given, still reaches the caller's checkpointing: reported."""
from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM


def test_lora_forward():
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["c_attn"]))
    model(input_ids=None)


def test_default_checkpointing():
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})


def build():
    base = AutoModelForCausalLM.from_pretrained("gpt2")
    return get_peft_model(base, LoraConfig(r=8, target_modules=["c_attn"]))


def train():
    model = build()
    model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
