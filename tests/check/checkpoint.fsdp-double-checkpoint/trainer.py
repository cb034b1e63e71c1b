from transformers import TrainingArguments

full = TrainingArguments(
    output_dir="out",
    fsdp="full_shard auto_wrap",
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": False},
)
both = TrainingArguments(
    output_dir="out",
    fsdp=["full_shard", "auto_wrap"],
    fsdp_config={"activation_checkpointing": True},
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": False},
)
# near miss: FSDP's own activation checkpointing only
fsdp_only = TrainingArguments(output_dir="out", fsdp="full_shard", fsdp_config={"activation_checkpointing": True})
