import torch.nn as nn
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

model = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
# Near miss: a non-reentrant inner checkpoint inside the non-reentrant wrapper recomputes once, as one level does
# (tests/stack/test_matrix.py::test_nested_checkpoint_recomputes).
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
head = nn.Identity()
