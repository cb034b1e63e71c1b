"""near miss: the cache is off in the config, so the wrapper's recomputation has nothing to write twice."""
import torch
from torch.distributed.algorithms._checkpoint.checkpoint_wrapper import apply_activation_checkpointing
from transformers import LlamaConfig, LlamaForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

torch.manual_seed(0)
config = LlamaConfig(vocab_size=64, hidden_size=16, intermediate_size=32, num_hidden_layers=2,
                     num_attention_heads=2, num_key_value_heads=2, use_cache=False)
model = LlamaForCausalLM(config).train()
apply_activation_checkpointing(model, check_fn=lambda m: isinstance(m, LlamaDecoderLayer))
optimizer = torch.optim.SGD(model.parameters(), lr=0.1)
for _ in range(2):
    ids = torch.randint(1, 64, (2, 8))
    model(input_ids=ids, labels=ids).loss.backward()
    optimizer.step()
    optimizer.zero_grad()
print("done")
