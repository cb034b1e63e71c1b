# versions: transformers==5.24.0, torch==2.13.0, peft==0.21.2, trl==1.14.2
"""The same SFTConfig for TRL 1.14, which has no `selective` (trl.selective): the key reaches torch's checkpoint,
and on transformers 5 the dict without `use_reentrant` runs reentrant (TRL sets `use_reentrant=False` itself only
on transformers < 5)."""
from trl import SFTConfig, SFTTrainer

sac = SFTConfig(output_dir="out", gradient_checkpointing_kwargs={"selective": True})
bad = SFTConfig(output_dir="out", gradient_checkpointing_kwargs={"selective": True, "use_reentrant": True})
SFTTrainer(model="m", args=sac).train()
