"""torch's checkpoint wrapper on a Llama trained with `use_cache=True` (transformers 4.57.6: the backward raises
CheckpointError; tests/stack/test_matrix.py::test_checkpoint_wrapper_kv_cache runs this file for real)."""
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=2)
model = LlamaForCausalLM(config).train()
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    ids = torch.randint(1, 64, (2, 8))
    model(input_ids=ids, labels=ids, use_cache=False).loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("done")
