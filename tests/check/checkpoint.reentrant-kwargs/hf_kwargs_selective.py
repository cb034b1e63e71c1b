# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2, trl==1.16.0
"""TRL's `selective` key where TRL does not read it, and other keys of Hugging Face's kwargs dict that reach a
reentrant checkpoint as the layer's keywords (tests/fixtures/logs/checkpoint.reentrant-kwargs--trl-selective-
key-in-plain-trainer-transformers5240: `ValueError: Unexpected keyword arguments: selective`, on 4.57.6 too)."""
from transformers import LlamaConfig, LlamaForCausalLM, Trainer, TrainingArguments

model = LlamaForCausalLM(LlamaConfig())
# A dict without use_reentrant: torch's default (reentrant) applies, `selective` is the layer's keyword.
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"selective": True})
model.activation_checkpointing_enable(activation_checkpointing_kwargs={"selective": True, "use_reentrant": True})
args = TrainingArguments(output_dir="out", gradient_checkpointing=True,
                         gradient_checkpointing_kwargs={"selective": True})
new = TrainingArguments(output_dir="out", activation_checkpointing=True,
                        activation_checkpointing_kwargs={"use_reentrant": True, "mask": None})
Trainer(model=model, args=args).train()

# Near misses: non-reentrant forwards keywords; transformers' and torch's own keys are not forwarded;
# checkpointing off; a dict that cannot be read.
model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"selective": True, "use_reentrant": False})
model.activation_checkpointing_enable(activation_checkpointing_kwargs={"every_n_layers": 2, "offload": True,
                                                                       "preserve_rng_state": False})
off = TrainingArguments(output_dir="out", gradient_checkpointing_kwargs={"selective": True})
given = dict(selective=True)
unknown = TrainingArguments(output_dir="out", gradient_checkpointing=True, gradient_checkpointing_kwargs=given)
