"""Lightning's FSDP policy (the non-reentrant `checkpoint_wrapper`) around transformers' own checkpoint, which is
reentrant by default on the 4.x release this case is checked for (4.57.6)."""
import lightning as L
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

llama = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
llama.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": True})
trainer = L.Trainer(strategy=L.pytorch.strategies.FSDPStrategy(activation_checkpointing_policy={LlamaDecoderLayer}))
