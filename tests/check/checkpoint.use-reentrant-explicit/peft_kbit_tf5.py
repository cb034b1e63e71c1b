# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2
# QLoRA preparation: PEFT passes gradient_checkpointing_kwargs={} even on transformers 5, so torch's reentrant
# default (and its warning) applies.
from peft import prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("m", load_in_4bit=True)
model = prepare_model_for_kbit_training(model)
# near misses: the kwargs are given, or checkpointing is left off
other = prepare_model_for_kbit_training(model, gradient_checkpointing_kwargs={"use_reentrant": False})
plain = prepare_model_for_kbit_training(model, use_gradient_checkpointing=False)
