# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# Twin of hf_unused_tf5_new_names.py: reentrant asked for explicitly, with ddp_find_unused_parameters.
from transformers import TrainingArguments

args = TrainingArguments("out", gradient_checkpointing=True, gradient_checkpointing_kwargs={"use_reentrant": True},
                         ddp_find_unused_parameters=True)
# near miss: the default is non-reentrant on transformers >= 5.0
fine = TrainingArguments("out", gradient_checkpointing=True, ddp_find_unused_parameters=True)
