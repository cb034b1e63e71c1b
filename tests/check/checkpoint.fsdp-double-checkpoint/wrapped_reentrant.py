"""transformers' checkpoint inside FSDP's non-reentrant wrapper, where the inner one is reentrant: explicitly, and by
transformers' default on the 4.x release this case is checked for (4.57.6: `use_reentrant=True`)."""
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
other = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
other.gradient_checkpointing_enable()
