from transformers import TrainingArguments

args = TrainingArguments(
    output_dir="out",
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": True},
    ddp_find_unused_parameters=True,
)
