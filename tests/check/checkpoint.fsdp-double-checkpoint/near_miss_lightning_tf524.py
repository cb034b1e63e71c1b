# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2, trl==1.16.0
"""Near miss: Lightning's policy around transformers' default checkpoint on 5.24.0 (non-reentrant: nested inside the
policy's non-reentrant wrapper it recomputes once), and no layer wrapped by hand."""
import lightning as L
from transformers import AutoModelForCausalLM
from transformers.models.llama.modeling_llama import LlamaDecoderLayer

llama = AutoModelForCausalLM.from_pretrained("meta-llama/Llama-3.2-1B")
llama.activation_checkpointing_enable()
trainer = L.Trainer(strategy=L.pytorch.strategies.FSDPStrategy(activation_checkpointing_policy={LlamaDecoderLayer}))
