from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2")
model.gradient_checkpointing_enable()
args = TrainingArguments(output_dir="out", gradient_checkpointing=True, per_device_train_batch_size=2)

# near misses
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
args = TrainingArguments(
    output_dir="out",
    gradient_checkpointing=True,
    gradient_checkpointing_kwargs={"use_reentrant": False},
)
args = TrainingArguments(output_dir="out", gradient_checkpointing=False)
