# versions: transformers==4.57.6, torch==2.13.0, peft==0.21.2, trl==1.16.0
"""Code written with transformers >= 5.23's names, checked for an environment with transformers 4.57.6."""
from transformers import LlamaConfig, LlamaForCausalLM, TrainingArguments
from trl import SFTConfig

model = LlamaForCausalLM(LlamaConfig())
model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
model.gradient_checkpointing_enable(every_n_layers=2)
args = TrainingArguments(output_dir="out", activation_checkpointing=True,
                         activation_checkpointing_kwargs={"use_reentrant": False})
sft = SFTConfig(output_dir="out", activation_checkpointing=True)
model.activation_checkpointing_disable()
