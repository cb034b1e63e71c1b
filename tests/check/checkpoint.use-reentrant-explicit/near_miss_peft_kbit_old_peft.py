# versions: transformers==4.57.6, torch==2.13.0, peft==0.5.0
# Near miss, twin of peft_kbit_tf5.py: PEFT before 0.6.0 has no `gradient_checkpointing_kwargs` and calls
# `gradient_checkpointing_enable()` without kwargs, so transformers' default (explicit `use_reentrant=True`
# on 4.38-4.57) applies: nothing PEFT-specific to report.
from peft import prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("m", load_in_4bit=True)
model = prepare_model_for_kbit_training(model)
