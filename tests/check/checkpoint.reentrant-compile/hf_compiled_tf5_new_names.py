# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# Twin of hf_compiled_tf5.py: the same misuse with the transformers >= 5.23 names.
import torch
from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2")
model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})
model = torch.compile(model)

other = AutoModelForCausalLM.from_pretrained("gpt2")
other.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": True})
other.compile()

args = TrainingArguments("out", activation_checkpointing=True, activation_checkpointing_kwargs={"use_reentrant": True},
                         torch_compile=True)
# near miss: transformers >= 5.0 checkpoints non-reentrant by default, compiled or not
plain = TrainingArguments("out", activation_checkpointing=True, torch_compile=True)
