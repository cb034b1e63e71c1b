# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# Twin of hf_fsdp_true_tf5_new_names.py: fsdp=True (transformers >= 5.10.1) with the Trainer's own checkpointing.
from transformers import TrainingArguments

args = TrainingArguments("out", fsdp=True, gradient_checkpointing=True)
both = TrainingArguments("out", fsdp=True, fsdp_config={"activation_checkpointing": True}, gradient_checkpointing=True)
