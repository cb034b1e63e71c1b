"""Near misses: inputs made to require grad, or the kbit preparation that does it itself."""
from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
from transformers import AutoModelForCausalLM

model = AutoModelForCausalLM.from_pretrained("facebook/opt-125m")
model = prepare_model_for_kbit_training(model)
model = get_peft_model(model, LoraConfig(r=8))
model.enable_input_require_grads()
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
