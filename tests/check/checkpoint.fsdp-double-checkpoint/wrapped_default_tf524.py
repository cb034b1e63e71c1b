# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2, trl==1.16.0
"""Near miss: the same default enable call on transformers 5.24.0, whose default is non-reentrant: nested inside the
non-reentrant wrapper it recomputes once, as one level does."""
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
model.activation_checkpointing_enable()
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
