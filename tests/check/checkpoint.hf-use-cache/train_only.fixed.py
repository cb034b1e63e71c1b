from transformers import AutoModelForCausalLM, TrainingArguments

model = AutoModelForCausalLM.from_pretrained("gpt2", use_cache=False)
args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                         gradient_checkpointing_kwargs={"use_reentrant": False})
