# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2, trl==1.16.0
"""Near misses: the same code, checked for transformers 5.24.0, which has these names: no checkpoint.api-too-new finding."""
from transformers import LlamaConfig, LlamaForCausalLM, TrainingArguments
from trl import SFTConfig

model = LlamaForCausalLM(LlamaConfig())
model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
model.gradient_checkpointing_enable(every_n_layers=2)
args = TrainingArguments(output_dir="out", activation_checkpointing=True,
                         activation_checkpointing_kwargs={"use_reentrant": False})
sft = SFTConfig(output_dir="out", activation_checkpointing=True)
model.activation_checkpointing_disable()
