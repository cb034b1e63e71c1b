"""Near misses: a pytest test module (peft's GPU tests, trl's trainer tests). The tests leave the reentrant
mode to the library's default on purpose, to exercise that default: no `use-reentrant-explicit` here.
The same calls in a training script are reported (peft_kbit_tf5.py, hf_enable.py)."""
import torch
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from torch.utils.checkpoint import checkpoint
from transformers import AutoModelForCausalLM, BitsAndBytesConfig, Trainer, TrainingArguments


def test_4bit_lora_training(tmp_path):
    model = AutoModelForCausalLM.from_pretrained("m", quantization_config=BitsAndBytesConfig(load_in_4bit=True))
    model = prepare_model_for_kbit_training(model)
    model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
    Trainer(model=model, args=TrainingArguments(output_dir=str(tmp_path), max_steps=3)).train()


def test_default_checkpointing():
    model = AutoModelForCausalLM.from_pretrained("gpt2")
    model.gradient_checkpointing_enable()
    assert model.is_gradient_checkpointing


def test_torch_default():
    layer = torch.nn.Linear(4, 4)
    x = torch.ones(2, 4, requires_grad=True)
    checkpoint(layer, x).sum().backward()
