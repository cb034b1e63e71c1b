# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# Twin of hf_compiled_tf5_new_names.py: the same misuse with the pre-5.23 names.
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2")
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
model = torch.compile(model)

other = AutoModelForCausalLM.from_pretrained("gpt2")
other.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
other.compile()

args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True},
                         torch_compile=True)
# near miss: transformers >= 5.0 checkpoints non-reentrant by default, compiled or not
plain = TrainingArguments("out", gradient_checkpointing=True, torch_compile=True)
