from peft import LoraConfig, get_peft_model
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("facebook/opt-125m")
model = get_peft_model(model, LoraConfig(r=8, target_modules=["q_proj", "v_proj"]))
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                         gradient_checkpointing_kwargs=dict(use_reentrant=True))
